//! Untrusted text never reaches a terminal raw (docs/reports.md, "Text from
//! outside oslab"): every string a results file, a raw file, a recording, the
//! results database or a governed program's name brings is fed terminal escapes
//! (OSC and CSI after ESC, BEL, the one-byte CSI U+009B), a direction override,
//! zero-width characters, a tab and a newline; each command that prints it must
//! show none of them raw, and still show the text, escaped.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// What the attacker appends to every string: retitle the window, clear the
/// screen, a C1 CSI, reverse the text, hide a character, break the line.
const POISON: &str = "\x1b]0;pwned\x07\x1b[2J\u{9b}31m\u{202E}\u{200B}\u{2066}\t|\n|";

/// How a one-line field carrying [`POISON`] shows.
const SHOWN: &str = "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{202e}\\u{200b}\\u{2066}\\t|\\n|";

/// Fields whose strings are names of a closed set (serde enums, the status'
/// tag): a file with another value there is refused, which
/// `a_refused_file_is_quoted_escaped` covers.
const CLOSED: &[&str] = &[
    "mode",
    "noise",
    "scale",
    "scheduler",
    "state",
    "status",
    "style",
    "verdict",
];

/// Asserts that `bytes` (what `what` printed) holds no terminal control.
fn clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for (b, name) in [(0x1b, "ESC"), (0x07, "BEL"), (b'\t', "a tab")] {
        assert!(!bytes.contains(&b), "{what} printed {name} raw:\n{text}");
    }
    for c in ['\u{9b}', '\u{202E}', '\u{200B}', '\u{2066}'] {
        assert!(!text.contains(c), "{what} printed {c:?} raw:\n{text}");
    }
}

fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    clean(what, &out.stdout);
    clean(what, &out.stderr);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every string in `v` with [`POISON`] appended, and every key of `params`
/// (the settings as run); `skip` names fields left as they are.
fn poison(v: &mut Value, skip: &[&str]) {
    match v {
        Value::String(s) => s.push_str(POISON),
        Value::Array(a) => a.iter_mut().for_each(|x| poison(x, skip)),
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let closed = x.is_string() && CLOSED.contains(&k.as_str());
                if !closed && !skip.contains(&k.as_str()) {
                    poison(x, skip);
                }
            }
            if let Some(Value::Object(params)) = m.get_mut("params") {
                let entries = std::mem::take(params);
                for (k, x) in entries {
                    params.insert(format!("{k}{POISON}"), x);
                }
            }
        }
        _ => {}
    }
}

fn oslab(db: &Path) -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_DB", db).env_remove("OSLAB_MACHINE");
    c
}

/// What `oslab ARGS` printed, with the results database `db`.
fn output(db: &Path, args: &[&OsStr]) -> Output {
    oslab(db).args(args).output().unwrap()
}

/// A null run's results with every string poisoned, a load warning, a note over
/// two lines and a failed result's error among them.
fn poisoned_results(dir: &Path) -> PathBuf {
    let plain = dir.join("plain.json");
    let out = output(
        &dir.join("unused.db"),
        &[
            s("run"),
            s("null"),
            s("--quick"),
            s("--no-db"),
            s("--json"),
            plain.as_os_str(),
        ],
    );
    ok("oslab run null", &out);
    let mut set = read_json(&plain);
    let first = set["results"][0].clone();
    let mut failed = first.clone();
    failed["status"] = serde_json::json!({"state": "failed", "error": "it broke"});
    let mut r = first;
    r["environment"]["load"]["warning"] = "busy".into();
    r["notes"] = serde_json::json!(["a note", "another"]);
    set["results"] = serde_json::json!([r, failed]);
    poison(&mut set, &[]);
    let path = dir.join("poisoned.json");
    std::fs::write(&path, set.to_string()).unwrap();
    path
}

fn s(text: &str) -> &OsStr {
    OsStr::new(text)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn report_shows_every_field_of_a_results_file_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = poisoned_results(dir.path());
    let out = output(&dir.path().join("h.db"), &[s("report"), file.as_os_str()]);
    let text = ok("oslab report", &out);
    assert!(
        text.contains(&format!("Null experiment (pipeline self-test){SHOWN}")),
        "the title, escaped:\n{text}"
    );
    for field in ["busy", "it broke", "a note", "another"] {
        assert!(
            text.contains(&format!("{field}\\u{{1b}}]0;pwned")),
            "{field}, escaped:\n{text}"
        );
    }
    // free text keeps its lines: the newline in a note starts a line of its own
    assert!(text.contains("\n         |\n"), "{text}");
}

#[test]
fn history_shows_an_imported_files_strings_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = poisoned_results(dir.path());
    let db = dir.path().join("h.db");
    ok(
        "oslab import",
        &output(&db, &[s("import"), file.as_os_str()]),
    );
    let runs = ok("oslab history", &output(&db, &[s("history")]));
    assert!(
        runs.contains(SHOWN),
        "host, kernel and names, escaped:\n{runs}"
    );
    let id = format!("null{POISON}");
    let one = output(&db, &[s("history"), s("--experiment"), s(&id)]);
    let one = ok("oslab history --experiment", &one);
    assert!(one.contains(SHOWN), "{one}");
}

#[test]
fn compare_shows_both_sides_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let a = poisoned_results(dir.path());
    let b = dir.path().join("b.json");
    std::fs::copy(&a, &b).unwrap();
    let out = output(
        &dir.path().join("h.db"),
        &[s("compare"), a.as_os_str(), b.as_os_str()],
    );
    let text = ok("oslab compare", &out);
    assert!(text.contains(SHOWN), "{text}");
}

#[test]
fn judge_shows_a_raw_files_strings_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("unused.db");
    let raw_dir = dir.path().join("raw");
    std::fs::create_dir(&raw_dir).unwrap();
    let out = output(
        &db,
        &[
            s("run"),
            s("null"),
            s("--quick"),
            s("--no-db"),
            s("--save-raw"),
            raw_dir.as_os_str(),
        ],
    );
    ok("oslab run --save-raw", &out);
    let saved = std::fs::read_dir(&raw_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let mut raw = read_json(&saved.path());
    raw["environment"]["load"]["warning"] = "busy".into();
    poison(&mut raw, &["experiment"]);
    let path = dir.path().join("poisoned.raw.json");
    std::fs::write(&path, raw.to_string()).unwrap();
    let text = ok("oslab judge", &output(&db, &[s("judge"), path.as_os_str()]));
    assert!(text.contains(&format!("busy{SHOWN}")), "{text}");

    // the experiment a raw file names is quoted when unknown: escaped too
    raw["experiment"] = format!("null{POISON}").into();
    std::fs::write(&path, raw.to_string()).unwrap();
    let err = refused("oslab judge", &output(&db, &[s("judge"), path.as_os_str()]));
    assert!(err.contains(&format!("'null{SHOWN}'")), "{err}");
}

/// Exit 2 and one sentence on standard error with no terminal control in it.
fn refused(what: &str, out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    clean(what, &out.stderr);
    assert_eq!(err.lines().count(), 1, "{what}: one sentence: {err}");
    err
}

#[test]
fn a_refused_file_is_quoted_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = poisoned_results(dir.path());
    // one result alone, as `report` also reads: the JSON reader's message quotes
    // the state it does not know
    let mut result = read_json(&file)["results"][0].clone();
    result["status"]["state"] = format!("done{POISON}").into();
    std::fs::write(&file, result.to_string()).unwrap();
    for command in ["report", "import"] {
        let out = output(&dir.path().join("h.db"), &[s(command), file.as_os_str()]);
        let err = refused(command, &out);
        assert!(err.contains("\\u{1b}]0;pwned"), "{err}");
    }
}

#[test]
fn a_replayed_recording_names_its_machine_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("unused.db");
    let rec = dir.path().join("rec.jsonl");
    let out = output(
        &db,
        &[
            s("watch"),
            s("--interval"),
            s("50ms"),
            s("--count"),
            s("2"),
            s("--record"),
            rec.as_os_str(),
        ],
    );
    ok("oslab watch --record", &out);
    let text = std::fs::read_to_string(&rec).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(head).unwrap();
    for k in ["host", "kernel"] {
        header[k] = format!("{k}{POISON}").into();
    }
    std::fs::write(&rec, format!("{header}\n{rest}")).unwrap();
    let replayed = output(&db, &[s("watch"), s("--from"), rec.as_os_str()]);
    ok("oslab watch --from", &replayed);
    let err = String::from_utf8_lossy(&replayed.stderr);
    assert!(err.contains("host\\u{1b}]0;pwned"), "{err}");
}

/// A program is any user's to name: a governed one whose file name is an escape
/// sequence is listed by `oslab wcall status` escaped.
#[test]
fn wcall_status_shows_a_governed_programs_name_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir
        .path()
        .join(format!("sleep{}", POISON.replace('\n', "")));
    std::fs::copy("/bin/sleep", &exe).unwrap();
    let name = format!("term-text-{}", std::process::id());
    let with_lib = |c: &mut Command| {
        c.env("OSLAB_WCALL_LIB", common::preload_lib())
            .env("OSLAB_JOURNAL_DIR", common::journal_dir("terminal-text"));
    };
    let mut daemon_cmd = oslab(&dir.path().join("unused.db"));
    with_lib(&mut daemon_cmd);
    let daemon = common::governor::start_daemon(daemon_cmd, &name, &["--no-cgroups"]);
    let mut run = oslab(&dir.path().join("unused.db"));
    with_lib(&mut run);
    let governed = common::governor::Reaped(
        run.args(["wcall", "run", "--name", &name, "--"])
            .arg(&exe)
            .arg("30")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let text = loop {
        let out = oslab(&dir.path().join("unused.db"))
            .args(["wcall", "status", "--name", &name])
            .output()
            .unwrap();
        let text = ok("oslab wcall status", &out);
        if text.contains("sleep") || start.elapsed() > Duration::from_secs(10) {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(governed);
    common::governor::stop(daemon);
    assert!(
        text.contains("sleep\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"),
        "the program, named escaped:\n{text}"
    );
}
