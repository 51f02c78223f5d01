//! The command line's own outputs: where files went, completions and manual pages
//! from the grammar, `list --settings`, and a read-only view interrupted.

mod common;

use std::process::Stdio;
use std::time::Duration;

fn run(args: &[&str]) -> std::process::Output {
    common::oslab().args(args).output().unwrap()
}

#[test]
fn a_run_says_where_its_files_went_and_how_big_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("report.html");
    let plots = tmp.path().join("plots");
    let out = common::oslab()
        .args(["run", "null", "--quick", "--no-db", "--html"])
        .arg(&html)
        .arg("--plots")
        .arg(&plots)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let size = std::fs::metadata(&html).unwrap().len();
    assert!(
        err.contains(&format!("oslab: wrote {} (", html.display())) && err.contains("KiB)"),
        "{err} ({size} bytes)"
    );
    assert!(
        err.contains(&format!("oslab: wrote 1 file into {}", plots.display())),
        "{err}"
    );
}

#[test]
fn completions_call_the_binary_back_for_each_shell() {
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    for (shell, mark) in [
        ("bash", "-F _clap_complete_oslab oslab"),
        ("zsh", "#compdef oslab"),
        ("fish", "complete --keep-order --exclusive --command oslab"),
    ] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(mark),
            "{shell}: {}",
            &text[..200.min(text.len())]
        );
        // Regression: started by its path, the code called back that path, the
        // build folder it was made in; it calls `oslab`, found on $PATH
        assert!(text.contains("OSLAB_COMPLETE="), "{shell}");
        let folder = bin.parent().unwrap().to_str().unwrap();
        assert!(!text.contains(folder), "{shell} names {folder}");
    }
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// What bash offers for the words typed so far (the last one being completed), with
/// the registration `oslab completions bash` printed sourced into a fresh bash.
fn bash_completes(words: &[&str]) -> Vec<String> {
    let script = format!(
        r#"source <("$OSLAB" completions bash)
COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMP_TYPE=9
_clap_complete_oslab oslab "${{COMP_WORDS[$COMP_CWORD]}}" "${{COMP_WORDS[$COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        words = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    // the completion code calls `oslab` back from $PATH, as an installed one is
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let path = std::env::join_paths(std::iter::once(bin.parent().unwrap().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env("OSLAB", &bin)
        .env("PATH", path)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_experiments_scenarios_and_settings_from_the_binary() {
    let listed = common::json_output(common::oslab().arg("list"));
    let cpu: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["id"].as_str())
        .filter(|id| id.starts_with("cpu."))
        .map(str::to_string)
        .collect();
    assert!(!cpu.is_empty());
    assert_eq!(bash_completes(&["oslab", "run", "cpu."]), cpu);
    assert_eq!(bash_completes(&["oslab", "wat"]), ["watch"]);
    // a setting's name with its `=`, and nothing once the value is begun
    let keys = bash_completes(&["oslab", "run", "wb.background", "--set", "backg"]);
    assert_eq!(keys, ["background="]);
    // Regression: every experiment's keys were offered whatever the line named;
    // now the named experiment's, and all of them where none is named yet
    let mut latency: Vec<String> = bash_completes(&["oslab", "run", "mem.latency", "--set", ""]);
    latency.sort();
    let declared = common::json_output(common::oslab().args(["list", "--settings"]));
    let mut own: Vec<String> = declared
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"] == "mem.latency")
        .flat_map(|e| e["settings"].as_array().unwrap().iter())
        .map(|s| format!("{}=", s["name"].as_str().unwrap()))
        .collect();
    own.sort();
    own.dedup();
    assert!(!own.is_empty(), "{declared}");
    assert_eq!(latency, own);
    let every = bash_completes(&["oslab", "run", "--set", ""]);
    assert!(every.len() > own.len(), "{every:?}");
    assert!(bash_completes(&["oslab", "run", "null", "--set", "background=3"]).is_empty());
    // the simulator's scenarios and settings
    let scenarios = bash_completes(&["oslab", "sim", "run", "testbed-"]);
    assert!(
        scenarios.contains(&"testbed-fig2".to_string())
            && scenarios.iter().all(|s| s.starts_with("testbed-")),
        "{scenarios:?}"
    );
    assert_eq!(
        bash_completes(&["oslab", "sim", "sweep", "paper-fig2", "--set", "bandw"]),
        ["bandwidth="]
    );
}

#[test]
fn the_manual_pages_come_from_the_grammar() {
    let out = run(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH oslab 1"), "{page}");
    assert!(page.contains("compare"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = common::oslab()
        .args(["man", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    for name in ["oslab.1", "oslab-run.1", "oslab-watch.1", "oslab-sim-run.1"] {
        let p = dir.join(name);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|_| panic!("no {name}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{name}");
    }
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = common::oslab()
        .args(["man", "--dir"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn list_settings_prints_only_the_settings() {
    let out = run(&["list", "--settings"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Settings"), "{text}");
    assert!(text.contains("round_trips"));
    // the experiment table's own columns never appear
    assert!(!text.contains("--quick") && !text.contains("'oslab run ID...'"));
}

#[test]
fn interrupting_a_read_only_view_undoes_nothing_and_says_so() {
    let mut child = common::oslab()
        .args(["watch", "--interval", "200ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // wait for the first lines, so the signal finds watch running
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read(&mut stdout, &mut first).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted (signal 2)"), "{err}");
    assert!(!err.contains("undo"), "{err}");
}

#[test]
fn the_trace_format_check_finds_what_it_should() {
    let good = serde_json::json!({"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 10, "tid": 10, "args": {"name": "spin"}},
        {"name": "running", "ph": "X", "pid": 10, "tid": 10, "ts": 100.0, "dur": 50.0},
        {"name": "inner", "ph": "X", "pid": 10, "tid": 10, "ts": 110.0, "dur": 10.0},
        {"name": "Dirty", "ph": "C", "pid": 10, "ts": 120.0, "args": {"bytes": 4096}}
    ]});
    assert!(common::trace_format::faults(&good, Some(1e6)).is_empty());
    let bad = serde_json::json!({"traceEvents": [
        {"name": "running", "ph": "X", "pid": 10, "tid": 10, "ts": 100.0, "dur": 50.0},
        {"name": "runnable", "ph": "X", "pid": 10, "tid": 10, "ts": 140.0, "dur": 50.0},
        {"name": "x", "ph": "Q", "pid": 1, "tid": 1, "ts": 1.0},
        {"name": "late", "ph": "X", "pid": 1, "tid": 2, "ts": 5e6, "dur": 1.0},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {}}
    ]});
    let f = common::trace_format::faults(&bad, Some(1e6));
    for what in [
        "overlaps",
        "unknown phase",
        "CLOCK_MONOTONIC",
        "names nothing",
    ] {
        assert!(f.iter().any(|x| x.contains(what)), "{what}: {f:?}");
    }
}

#[test]
fn the_experiment_list_fits_the_terminal() {
    for args in [&["list"][..], &["list", "--settings"][..]] {
        let out = common::oslab()
            .env("COLUMNS", "90")
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 90, "{args:?}: {widest} columns");
        if args == ["list"] {
            // the work each experiment reproduces, in words a reader can look up
            // (a column, or in each row's block where the table cannot fit)
            assert!(
                text.contains("after") && !text.contains("section"),
                "{text}"
            );
            assert!(text.contains("Kim"), "{text}");
        }
        let wide = common::oslab()
            .env("COLUMNS", "90")
            .args(args)
            .arg("--wide")
            .output()
            .unwrap();
        let wide = String::from_utf8(wide.stdout).unwrap();
        assert!(
            wide.lines().any(|l| l.chars().count() > 90),
            "{args:?} --wide"
        );
    }
}

/// Every environment variable the product's code reads: the names in
/// `var("X")`, `var_os("X")`, `getenv(c"X")` and in constants passed to them,
/// and TMPDIR wherever the temporary folder is asked for; test code (files
/// `tests.rs` and `testing.rs`, and everything after `#[cfg(test)]`) left out.
fn variables_read_by_the_code() -> std::collections::BTreeSet<String> {
    fn rs_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rs_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    /// The quoted upper-case name right after `open` in `text`, if any.
    fn quoted_name(text: &str) -> Option<String> {
        let t = text
            .trim_start()
            .strip_prefix('c')
            .unwrap_or(text.trim_start());
        let name: String = t
            .strip_prefix('"')?
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        (name.len() > 1 && t[1 + name.len()..].starts_with('"')).then_some(name)
    }
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(&crates).unwrap().flatten() {
        if c.path().join("src").is_dir() {
            rs_files(&c.path().join("src"), &mut files);
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for f in files {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        if stem == "tests" || stem == "testing" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for call in ["var(", "var_os(", "getenv("] {
            for (at, _) in code.match_indices(call) {
                let rest = &code[at + call.len()..];
                if let Some(n) = quoted_name(rest) {
                    names.insert(n);
                    continue;
                }
                // a constant: `const IDENT: &str = "NAME";` in the same file
                let ident: String = rest
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                if ident.len() > 1
                    && let Some(def) = code.find(&format!("const {ident}: &str = "))
                    && let Some(n) = quoted_name(&code[def + ident.len() + 15..])
                {
                    names.insert(n);
                }
            }
        }
        if code.contains("temp_dir()") {
            names.insert("TMPDIR".into());
        }
    }
    names
}

#[test]
fn the_manual_names_every_variable_the_code_reads_and_how_oslab_exits() {
    let names = variables_read_by_the_code();
    for expected in [
        "OSLAB_DB",
        "OSLAB_MACHINE",
        "OSLAB_JOURNAL_DIR",
        "OSLAB_WCALL_LIB",
    ] {
        assert!(
            names.contains(expected),
            "the scan finds {expected}: {names:?}"
        );
    }
    let out = run(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    let section = |title: &str| -> String {
        let start = page
            .find(&format!(".SH \"{title}\""))
            .unwrap_or_else(|| panic!("no {title} in oslab(1)"));
        let rest = &page[start + 4..];
        rest[..rest.find(".SH ").unwrap_or(rest.len())].to_string()
    };
    let environment = section("ENVIRONMENT");
    for name in &names {
        assert!(
            environment.contains(&format!("\\fB{name}\\fR")),
            "ENVIRONMENT does not name {name}, which the code reads"
        );
    }
    let status = section("EXIT STATUS");
    for code in ["0", "1", "2", "3"] {
        assert!(status.contains(&format!("\\fB{code}\\fR")), "{status}");
    }
    assert!(section("FILES").contains("results.db"));
    assert!(section("EXAMPLES").contains("oslab run all \\-\\-quick"));
    let tmp = tempfile::tempdir().unwrap();
    let out = common::oslab()
        .args(["man", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let run_page = std::fs::read_to_string(tmp.path().join("oslab-run.1")).unwrap();
    assert!(run_page.contains(".SH \"EXIT STATUS\"") && run_page.contains(".SH \"ENVIRONMENT\""));
    assert!(
        !run_page.contains(".SH \"EXAMPLES\""),
        "examples are oslab(1)'s"
    );
}

/// `--json FILE` means one thing on every command: FILE, or `-` for standard
/// output alone; the bare flag is refused with the form it takes now.
#[test]
fn json_takes_a_file_or_dash_on_every_command() {
    let bare = run(&["info", "--json"]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bare.stderr).contains("--json <FILE>"),
        "{}",
        String::from_utf8_lossy(&bare.stderr)
    );
    let only_json = run(&["list", "--json", "-"]);
    assert!(only_json.status.success());
    let v: serde_json::Value = serde_json::from_slice(&only_json.stdout).unwrap();
    assert!(v.as_array().is_some_and(|a| !a.is_empty()));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("list.json");
    let both = common::oslab()
        .args(["list", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(both.status.success());
    let table = String::from_utf8(both.stdout).unwrap();
    assert!(
        table.contains("cpu.syscall"),
        "the table still prints: {table}"
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written, v, "the file holds what - prints");
    let nowhere = run(&[
        "sim",
        "sweep",
        "paper-fig2",
        "--vary",
        "dirty_bytes=8MiB,16MiB",
        "--json",
        "/no/such/dir/x.json",
    ]);
    assert_eq!(
        nowhere.status.code(),
        Some(2),
        "an unwritable FILE is refused first"
    );
}

/// `--wide` is offered where a table is printed, not on commands that print
/// none; it is still accepted there (a shell alias may always pass it).
#[test]
fn wide_is_offered_only_where_tables_are_printed() {
    for args in [
        &["man", "--help"][..],
        &["completions", "--help"],
        &["wcall", "attach", "--help"],
    ] {
        let help = String::from_utf8(run(args).stdout).unwrap();
        assert!(
            help.contains("Usage:") && !help.contains("--wide"),
            "{args:?}: {help}"
        );
    }
    let help = String::from_utf8(run(&["run", "--help"]).stdout).unwrap();
    assert!(help.contains("--wide"), "{help}");
    assert!(run(&["man", "--wide"]).status.success());
    assert!(run(&["--wide", "completions", "bash"]).status.success());
}
