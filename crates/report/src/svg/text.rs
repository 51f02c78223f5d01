//! Room for text in a plot without measuring glyphs: widths estimated from the
//! characters (generous for the wide sans-serif fonts browsers fall back to), labels
//! placed in rows so that none covers another, long lines wrapped.

/// The estimated width of `s` in `size`-pixel sans-serif text, on the wide side.
pub fn width(s: &str, size: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' | '(' | ')' | '['
            | ']' | 'I' | 'f' | 't' | 'r' => 0.36,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.92,
            c if c.is_ascii_uppercase() => 0.72,
            c if c.is_ascii_digit() => 0.64,
            _ => 0.62,
        })
        .sum();
    em * size
}

/// A label's horizontal extent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub left: f64,
    pub right: f64,
}

/// Puts each label (`spans[i]`) in a row where it keeps `gap` from every label
/// there; returns each label's row (0 = first). Each hangs on a vertical line at
/// `lines[i]`, which runs from its row down through every row below it, so a label
/// also avoids the lines of labels in rows above its own, and keeps its own line out of labels
/// in rows below. Labels are placed from the leftmost line rightwards, so labels
/// reading rightwards from their lines step down like stairs. Where no row allows
/// that, the label takes the deepest row (the plot's halo keeps a line that
/// crosses it legible).
pub fn rows_clear_of_lines(spans: &[Span], lines: &[f64], gap: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spans.len().min(lines.len())).collect();
    order.sort_by(|a, b| lines[*a].total_cmp(&lines[*b]));
    let mut placed: Vec<(Span, f64, usize)> = Vec::new();
    let mut rows = vec![0; order.len()];
    for i in order {
        let (s, x) = (&spans[i], lines[i]);
        let fits = |row: usize| {
            placed.iter().all(|(o, ox, orow)| {
                let apart = s.left >= o.right + gap || s.right + gap <= o.left;
                let crosses = |span: &Span, x: f64| span.left - 2.0 < x && x < span.right + 2.0;
                (*orow != row || apart)
                    && (*orow >= row || !crosses(s, *ox))
                    && (*orow <= row || !crosses(o, x))
            })
        };
        let deepest = placed.iter().map(|p| p.2 + 1).max().unwrap_or(0);
        let row = (0..=deepest).find(|r| fits(*r)).unwrap_or(deepest);
        placed.push((*s, x, row));
        rows[i] = row;
    }
    rows
}

/// `s` broken at spaces into lines no wider than `max` pixels (a single word wider
/// than that stays whole).
pub fn wrap(s: &str, size: f64, max: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        let candidate = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if width(&candidate, size) > max && !cur.is_empty() {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        } else {
            cur = candidate;
        }
    }
    lines.push(cur);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_labels_go_to_further_rows() {
        let s = |l: f64, r: f64| Span { left: l, right: r };
        // the case: "sysfs L1d 48 KiB" right beside "edge 1 49.4 KiB"
        let spans = [s(100.0, 200.0), s(104.0, 190.0), s(300.0, 350.0)];
        let r = rows_clear_of_lines(&spans, &[97.0, 101.0, 297.0], 4.0);
        assert_eq!(r, vec![0, 1, 0]);
        let r = rows_clear_of_lines(&[s(0.0, 10.0), s(12.0, 20.0)], &[-3.0, 9.0], 4.0);
        assert_eq!(r, vec![0, 1]);
    }

    #[test]
    fn a_label_keeps_clear_of_the_lines_above_it() {
        let s = |l: f64, r: f64| Span { left: l, right: r };
        // the issue's case: "sysfs L2 1 MiB" (line at 100) given first, then "L2 ends
        // 608.8 KiB-724.1 KiB" (line at 60) whose label runs over the first's line:
        // placed in the plot's order it went below, where that line struck through it
        let spans = [s(103.0, 190.0), s(63.0, 200.0)];
        let lines = [100.0, 60.0];
        assert_eq!(rows_clear_of_lines(&spans, &lines, 4.0), vec![1, 0]);
        // three in a staircase, and one far off that shares the first row
        let spans = [
            s(13.0, 90.0),
            s(33.0, 120.0),
            s(53.0, 130.0),
            s(303.0, 350.0),
        ];
        let lines = [10.0, 30.0, 50.0, 300.0];
        assert_eq!(rows_clear_of_lines(&spans, &lines, 4.0), vec![0, 1, 2, 0]);
        // a label reading leftwards over a line to its left has no clear row: the
        // deepest one
        let spans = [s(253.0, 350.0), s(200.0, 297.0)];
        assert_eq!(
            rows_clear_of_lines(&spans, &[250.0, 300.0], 4.0),
            vec![0, 1]
        );
    }

    #[test]
    fn wrapping_keeps_words_whole() {
        let lines = wrap("Load-to-use latency versus working set size", 16.0, 200.0);
        assert!(lines.len() > 1);
        assert_eq!(
            lines.join(" "),
            "Load-to-use latency versus working set size"
        );
        assert!(lines.iter().all(|l| width(l, 16.0) <= 200.0));
    }

    #[test]
    fn wide_letters_count_more() {
        assert!(width("MMMM", 10.0) > width("iiii", 10.0) * 2.0);
    }
}
