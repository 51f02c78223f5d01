//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// Whether the tests run as root (effective uid 0), from /proc/self/status.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// A journal folder for one test file's oslab processes, inside the build's own
/// temporary folder (never the system's /tmp, so the suite leaves nothing there).
pub fn journal_dir(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("journals")
        .join(name)
}

/// Runs an oslab command that prints a result set as JSON on stdout, and returns it;
/// fails the test with oslab's stderr when the command fails.
pub fn json_output(cmd: &mut std::process::Command) -> serde_json::Value {
    let out = cmd.args(["--json", "-"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is only JSON")
}

/// The entry called `name` in a JSON list of measurements, findings or claims.
pub fn named<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name || m["id"] == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

/// The governor's interposer for the tests, built from the current source into a
/// folder of its own: `cargo test` does not build a cdylib that nothing links, and
/// its crate needs only libc, so this takes seconds.
/// A claim's verdict, or "disturbed" where it was not judged because other
/// programs' work was beyond what its method tolerates: tests run beside each
/// other, so a timing claim may meet that on any machine.
pub fn verdict_or_disturbed(claim: &serde_json::Value) -> &str {
    let verdict = claim["verdict"].as_str().unwrap_or("");
    let disturbed = verdict == "not_judged"
        && claim["why"]
            .as_str()
            .is_some_and(|w| w.contains("(it tolerates"));
    if disturbed { "disturbed" } else { verdict }
}

/// The `key` string of every object in a JSON array (measurement names, claim ids).
pub fn strings<'a>(list: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .map(|a| a.iter().filter_map(|x| x[key].as_str()).collect())
        .unwrap_or_default()
}

pub fn preload_lib() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("preload");
            let status = std::process::Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "oslab-wcall-preload",
                    "--target-dir",
                ])
                .arg(&target)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building the interposer failed");
            target.join("debug").join("liboslab_wcall.so")
        })
        .clone()
}

/// Compiles a C file from tests/fixtures with the system compiler (the paced
/// writer from the lab, where wb.wcall builds it too).
pub fn compile_c(source: &str, out: &std::path::Path, extra: &[&str]) -> bool {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = if source == "paced_writer.c" {
        manifest.join("../lab/src/wb/wcall/paced_writer.c")
    } else {
        manifest.join("tests/fixtures").join(source)
    };
    std::process::Command::new("cc")
        .args(["-O2", "-o"])
        .arg(out)
        .arg(src)
        .args(extra)
        .status()
        .is_ok_and(|s| s.success())
}

/// The experiment ids of a JSON result list, in order.
pub fn experiment_ids(results: &serde_json::Value) -> Vec<String> {
    results
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["experiment"].as_str().unwrap().to_string())
        .collect()
}

/// The results database the tests' runs write into, inside the build folder, so a
/// test run never adds to the user's own history.
pub fn test_db() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tests-results.db")
}

/// The oslab binary, keeping results in [`test_db`].
pub fn oslab() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"));
    c.env("OSLAB_DB", test_db());
    default_signals(&mut c);
    c
}

/// SIGINT, SIGTERM and SIGHUP at their default action, as from a terminal, even
/// when the tests run in the background of a non-interactive shell (which starts
/// them with SIGINT ignored) or under nohup (SIGHUP): a signal ignored on entry
/// never reaches oslab, and a shell cannot trap it.
pub fn default_signals(c: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls signal(2), which is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// The oslab binary with its journal in `journal` (see [`journal_dir`]).
pub fn oslab_journaled(journal: &std::path::Path) -> std::process::Command {
    let mut c = oslab();
    c.env("OSLAB_JOURNAL_DIR", journal);
    c
}

/// Whether `oslab stalls` can trace the kernel here (root, eBPF); the reason
/// when it cannot.
pub fn stalls_tracing_here(journal: &std::path::Path) -> Result<(), String> {
    if !is_root() {
        return Err("needs root".into());
    }
    let out = oslab_journaled(journal)
        .args([
            "stalls",
            "--count",
            "1",
            "--interval",
            "100ms",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Runs a command to its end and fails the test with its stderr unless it succeeded.
pub fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A testbed that goes down when dropped.
pub struct Testbed {
    journal: std::path::PathBuf,
    pub mount: std::path::PathBuf,
}

impl Testbed {
    /// A testbed capped at `bandwidth` (e.g. "20MiB/s") in `scratch`.
    pub fn up(journal: &std::path::Path, scratch: &std::path::Path, bandwidth: &str) -> Testbed {
        let out = succeed(
            oslab_journaled(journal)
                .args([
                    "testbed",
                    "up",
                    "--bandwidth",
                    bandwidth,
                    "--size",
                    "1GiB",
                    "--scratch",
                ])
                .arg(scratch),
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mount = text
            .split("mounted on ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("the testbed names its mount point");
        Testbed {
            journal: journal.to_path_buf(),
            mount: std::path::PathBuf::from(mount),
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let _ = oslab_journaled(&self.journal)
            .args(["testbed", "down"])
            .output();
    }
}

pub mod attacker;
pub mod governor;
pub mod guests;
pub mod svg_layout;
pub mod trace_format;
pub mod users;

/// Runs `cmd` with `input` on its standard input, capturing its output.
pub fn output_with_input(
    cmd: &mut std::process::Command,
    input: &[u8],
) -> std::io::Result<std::process::Output> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // a child that exits without reading is answered, not an error here
    let _ = child.stdin.take().expect("piped").write_all(input);
    child.wait_with_output()
}
