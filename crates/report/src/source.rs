//! The works each experiment reproduces, by the section number of oslab's source
//! material that every result carries (`section` in the JSON): named so a reader
//! can find them.

/// The work behind `section` ("4", "4, 7"), or None for "-" and numbers no work
/// has.
pub fn of_section(section: &str) -> Option<String> {
    let works: Vec<&str> = section.split(',').filter_map(|s| work(s.trim())).collect();
    (!works.is_empty()).then(|| works.join("; "))
}

/// The works behind `section` in a few words each (a table's column): the
/// author and the chapter or paper; "-" for none.
pub fn short_of_section(section: &str) -> String {
    let works: Vec<&str> = section.split(',').filter_map(|s| short(s.trim())).collect();
    if works.is_empty() {
        "-".to_string()
    } else {
        works.join("; ")
    }
}

fn short(section: &str) -> Option<&'static str> {
    Some(match section {
        "1" | "2" | "3" => "Takeuchi, memory",
        "4" => "Kang, ch. 10",
        "5" => "Sigoure",
        "6" => "Takeuchi, scheduler",
        "7" => "Kim and Park (WCALL)",
        _ => return None,
    })
}

fn work(section: &str) -> Option<&'static str> {
    Some(match section {
        "1" | "2" | "3" => "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\"",
        "4" => "Kang Jin-woo, \"Linux Kernel Story for DevOps and SE\", ch. 10",
        "5" => "B. Sigoure, \"How long does it take to make a context switch?\"",
        "6" => "S. Takeuchi, \"Linux no Shikumi\", ch. \"Process scheduler\"",
        "7" => {
            "Kim and Park, \"A Dynamic Allocation of Write Cache to Improve I/O Real-Time Responsiveness in Linux\""
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sections_name_their_works() {
        assert!(super::of_section("4").unwrap().starts_with("Kang Jin-woo"));
        let both = super::of_section("4, 7").unwrap();
        assert!(
            both.contains("Kang") && both.contains("Kim and Park"),
            "{both}"
        );
        assert_eq!(
            super::short_of_section("4, 7"),
            "Kang, ch. 10; Kim and Park (WCALL)"
        );
        assert_eq!(super::short_of_section("-"), "-");
        assert_eq!(super::of_section("-"), None);
        assert_eq!(super::of_section("99"), None);
    }
}
