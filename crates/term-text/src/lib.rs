//! Text that did not come from oslab's own code (a results file, a raw file, a
//! recording, the results database, a socket, a process or host name), as it may
//! be printed on a terminal.
//!
//! oslab runs as root, so such text is an attacker's: `ESC ] 0 ; ... BEL` retitles
//! the window, `ESC [ 2 J` clears the screen, a right-to-left override makes a
//! name read as another, a zero-width character hides in one. Every terminal
//! writer passes such text through [`one_line`] (a field: a name, a title, a cell)
//! or [`lines`] (free text that may hold several lines: a note, an error) before
//! printing it. What is kept is the text itself, so it stays recognisable; what is
//! escaped is spelled the way Rust writes it (`\t`, `\n`, `\r`, `\u{1b}`).
//!
//! A backslash is not doubled: `\n` in the output can be a newline that was
//! escaped or the two characters typed, which is harmless on a terminal, and
//! paths and regular expressions read as they are.
#![forbid(unsafe_code)]

/// `s` as one line: a tab, newline or carriage return as `\t`, `\n`, `\r`;
/// every other control character (C0, DEL, C1 such as U+009B, the one-byte CSI)
/// and every invisible formatting character (direction overrides and isolates,
/// zero-width spaces and joiners, fillers, tags) as `\u{..}`; all else as it is.
pub fn one_line(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_shown(&mut out, c);
    }
    out
}

/// Free text that may hold several lines: each line as [`one_line`] shows it, the
/// lines joined by a newline (a carriage return before a newline ends the line
/// with it). No control character but the newline between lines is left.
pub fn lines(s: &str) -> String {
    s.split('\n')
        .map(|l| one_line(l.strip_suffix('\r').unwrap_or(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `c` is printed escaped.
pub fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

fn push_shown(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        c if needs_escape(c) => out.extend(c.escape_unicode()),
        c => out.push(c),
    }
}

/// Characters that take no room and show nothing, or change how the text around
/// them reads: Unicode's format characters that matter on a terminal (soft
/// hyphen, Arabic letter mark, zero-width space, non-joiner and joiner, the
/// direction marks, embeddings, overrides and isolates, word joiner and invisible
/// operators, byte-order mark, interlinear annotation, tags), the line and
/// paragraph separators, and the letters that draw nothing (Hangul fillers,
/// Khmer's invisible vowels, Mongolian's variation selectors and vowel separator,
/// the combining grapheme joiner).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{61C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_terminal_escape_is_spelled_out_and_the_text_kept() {
        let attack = "host\x1b]0;owned\x07\x1b[2J\u{9b}31m";
        assert_eq!(
            one_line(attack),
            "host\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{9b}31m"
        );
    }

    #[test]
    fn tabs_and_newlines_in_a_field_show_as_backslash_escapes() {
        assert_eq!(one_line("a\tb\nc\r"), "a\\tb\\nc\\r");
    }

    #[test]
    fn direction_overrides_and_zero_width_characters_are_escaped() {
        assert_eq!(one_line("evil\u{202E}fdp.exe"), "evil\\u{202e}fdp.exe");
        assert_eq!(one_line("ad\u{200B}min"), "ad\\u{200b}min");
        assert_eq!(one_line("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(one_line("\u{FEFF}bom"), "\\u{feff}bom");
        assert_eq!(one_line("tag\u{E0041}"), "tag\\u{e0041}");
    }

    #[test]
    fn printable_text_of_any_script_is_left_as_it_is() {
        for s in [
            "vda",
            "naïve µs ·",
            "한국어 커널",
            "日本",
            "Ελληνικά",
            "a\\nb",
            "",
        ] {
            assert_eq!(one_line(s), s);
            assert_eq!(lines(s), s);
        }
    }

    #[test]
    fn free_text_keeps_its_lines_and_escapes_within_them() {
        assert_eq!(
            lines("one\r\ntwo\x1b[2J\n\tthree"),
            "one\ntwo\\u{1b}[2J\n\\tthree"
        );
        assert_eq!(lines("a\rb"), "a\\rb", "a carriage return inside a line");
    }

    proptest! {
        #[test]
        fn nothing_that_needs_escaping_survives(s in any::<String>()) {
            let one = one_line(&s);
            prop_assert!(!one.chars().any(needs_escape), "{one:?}");
            let many = lines(&s);
            prop_assert!(!many.chars().any(|c| c != '\n' && needs_escape(c)), "{many:?}");
            prop_assert_eq!(many.matches('\n').count(), s.matches('\n').count());
        }

        #[test]
        fn every_character_kept_is_kept_in_order(s in any::<String>()) {
            let kept: String = s.chars().filter(|c| !needs_escape(*c)).collect();
            let mut rest = one_line(&s);
            for c in kept.chars() {
                let at = rest.find(c);
                prop_assert!(at.is_some(), "{c:?} of {s:?} is missing");
                rest = rest[at.unwrap_or(0) + c.len_utf8()..].to_string();
            }
        }
    }
}
