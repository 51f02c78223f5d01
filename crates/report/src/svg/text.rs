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

/// Puts each span in the first row where it keeps `gap` from every span already
/// there; returns each span's row (0 = first).
pub fn rows(spans: &[Span], gap: f64) -> Vec<usize> {
    let mut taken: Vec<Vec<Span>> = Vec::new();
    spans
        .iter()
        .map(|s| {
            let free = |row: &Vec<Span>| {
                row.iter()
                    .all(|o| s.left >= o.right + gap || s.right + gap <= o.left)
            };
            match taken.iter().position(free) {
                Some(i) => {
                    taken[i].push(*s);
                    i
                }
                None => {
                    taken.push(vec![*s]);
                    taken.len() - 1
                }
            }
        })
        .collect()
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
        let r = rows(&[s(100.0, 200.0), s(104.0, 190.0), s(300.0, 350.0)], 4.0);
        assert_eq!(r, vec![0, 1, 0]);
        let r = rows(&[s(0.0, 10.0), s(12.0, 20.0)], 4.0);
        assert_eq!(r, vec![0, 1]);
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
