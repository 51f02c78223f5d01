//! `oslab watch`: text, JSON lines, and the metrics endpoint scraped over HTTP.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use predicates::prelude::*;

#[test]
fn text_view_has_units_and_one_line_per_interval() {
    let out = assert_cmd::Command::cargo_bin("oslab")
        .unwrap()
        .args(["watch", "--interval", "50ms", "--count", "3"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.starts_with("time"));
    assert!(text.lines().nth(1).unwrap().contains("MiB"), "a units line");
    let data: Vec<&str> = text
        .lines()
        .skip(2)
        .filter(|l| !l.starts_with("  "))
        .collect();
    assert_eq!(data.len(), 3, "{text}");
}

#[test]
fn json_lines_parse() {
    let out = assert_cmd::Command::cargo_bin("oslab")
        .unwrap()
        .args(["watch", "--interval", "50ms", "--count", "2", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect();
    assert_eq!(lines.len(), 2);
    for v in &lines {
        assert!(v["memory"]["kbmemfree"].as_u64().unwrap() > 0);
        assert!(v["interval_s"].as_f64().unwrap() > 0.0);
        assert!(v["unix_time_s"].as_f64().unwrap() > 1e9);
    }
}

#[test]
fn bad_values_are_usage_errors() {
    assert_cmd::Command::cargo_bin("oslab")
        .unwrap()
        .args(["watch", "--interval", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--interval"));
    assert_cmd::Command::cargo_bin("oslab")
        .unwrap()
        .args(["watch", "--prometheus", "256.1.1.1:99999", "--once"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--prometheus 256.1.1.1:99999: not an address",
        ));
}

/// A well-formed address that cannot be had is a failure at run time (exit 1),
/// not a usage error.
#[test]
fn a_busy_port_is_a_runtime_failure() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    assert_cmd::Command::cargo_bin("oslab")
        .unwrap()
        .args(["watch", "--prometheus", &addr, "--once"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!("cannot listen on {addr}")));
}

/// Checks text against the OpenMetrics rules oslab relies on: every sample belongs
/// to a family declared by a TYPE line before it, names are valid, values are
/// numbers, and the exposition ends with `# EOF`.
fn check_openmetrics(text: &str) -> usize {
    let valid_name = |n: &str| {
        !n.is_empty()
            && n.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut families: Vec<String> = Vec::new();
    let mut kinds: Vec<bool> = Vec::new();
    let mut samples = 0;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "ends with # EOF");
    for l in &lines[..lines.len() - 1] {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap();
            assert!(valid_name(name), "{name}");
            let kind = it.next().unwrap();
            assert!(["gauge", "counter"].contains(&kind));
            assert!(
                !families.contains(&name.to_string()),
                "family declared twice: {name}"
            );
            families.push(name.to_string());
            // a counter's samples are named FAMILY_total
            kinds.push(kind == "counter");
        } else if let Some(rest) = l.strip_prefix("# UNIT ") {
            let mut it = rest.split(' ');
            let (name, unit) = (it.next().unwrap(), it.next().unwrap());
            assert!(
                name.ends_with(&format!("_{unit}")),
                "unit is the name's suffix: {l}"
            );
        } else if l.starts_with("# HELP ") {
        } else {
            assert!(!l.starts_with('#'), "unknown comment {l}");
            let (series, value) = l.rsplit_once(' ').unwrap();
            value
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("value of {l}"));
            let name = series.split('{').next().unwrap();
            let family = if kinds.last() == Some(&true) {
                name.strip_suffix("_total")
                    .unwrap_or_else(|| panic!("a counter without _total: {l}"))
            } else {
                name
            };
            assert_eq!(
                families.last().map(String::as_str),
                Some(family),
                "sample under its family: {l}"
            );
            if let Some(labels) = series.strip_prefix(name) {
                if !labels.is_empty() {
                    assert!(labels.starts_with('{') && labels.ends_with('}'), "{l}");
                }
            }
            samples += 1;
        }
    }
    samples
}

/// The Accept header Prometheus 2.x sends when it scrapes.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Parses `text` with the Prometheus Python client's parser for `format`
/// ("openmetrics": its strict OpenMetrics parser; "text": the classic one) and
/// returns the family names, or why it could not run here.
fn python_parse(format: &str, text: &str) -> Result<Vec<String>, String> {
    let script = r#"
import sys
try:
    from prometheus_client.parser import text_string_to_metric_families as classic
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
except ImportError:
    sys.exit(3)
parse = om if sys.argv[1] == "openmetrics" else classic
for f in parse(sys.stdin.read()):
    print(f.name, f.type, len(f.samples))
"#;
    // Debian's python3-prometheus-client is for the system's python3, which a
    // python3 earlier on PATH may not be
    for python in ["python3", "/usr/bin/python3"] {
        let Ok(out) = common::output_with_input(
            Command::new(python).args(["-c", script, format]),
            text.as_bytes(),
        ) else {
            continue;
        };
        match out.status.code() {
            Some(0) => {
                return Ok(String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(|l| l.split(' ').next().unwrap_or("").to_string())
                    .collect());
            }
            Some(3) => continue,
            _ => panic!(
                "the {format} parser refused the text: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    Err("no python3 with prometheus_client (Debian: python3-prometheus-client)".into())
}

#[test]
fn metrics_come_in_the_format_the_client_asks_for_and_parse_strictly() {
    let ex = Exporter::start();
    let (status, ctype, om) = ex.get("/metrics");
    assert_eq!(status, 200, "{om}");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    // curl and browsers name no format: the classic text, as node_exporter
    let (status, ctype, text) = ex.get_accepting("/metrics", "");
    assert_eq!(status, 200, "{text}");
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    assert!(
        text.contains("# HELP oslab_context_switches_total ")
            && text.contains("# TYPE oslab_context_switches_total counter"),
        "promtool wants HELP and TYPE on a counter's sample name"
    );
    let (_, ctype, _) = ex.get_accepting("/metrics", "text/plain;version=0.0.4");
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    let (status, ctype, page) = ex.get_accepting("/", "text/html");
    assert_eq!(status, 200);
    assert!(
        ctype.starts_with("text/html") && page.contains("href=\"/metrics\""),
        "{page}"
    );
    match (
        python_parse("openmetrics", &om),
        python_parse("text", &text),
    ) {
        (Ok(a), Ok(b)) => {
            assert!(a.len() >= 19, "{a:?}");
            assert!(a.iter().any(|n| n == "oslab_context_switches"), "{a:?}");
            assert_eq!(a.len(), b.len(), "the same families: {a:?} {b:?}");
        }
        (Err(why), _) | (_, Err(why)) => eprintln!("skipped the Python parsers: {why}"),
    }
}

#[test]
fn prometheus_endpoint_serves_openmetrics() {
    let mut child = Command::new(cargo_bin("oslab"))
        .args([
            "watch",
            "--interval",
            "50ms",
            "--count",
            "200",
            "--quiet",
            "--prometheus",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    // The first interval needs 50 ms; retry briefly while the endpoint says 503.
    let mut body = String::new();
    let mut ctype = String::new();
    for _ in 0..100 {
        match ureq::get(&url).header("Accept", PROMETHEUS_ACCEPT).call() {
            Ok(mut resp) => {
                ctype = resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                body = resp.body_mut().read_to_string().unwrap();
                break;
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    let missing = ureq::get(&url.replace("/metrics", "/other")).call();
    let _ = child.kill();
    let _ = child.wait();
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let n = check_openmetrics(&body);
    assert!(n >= 19, "{n} samples");
    assert!(body.contains("oslab_memory_dirty_bytes "));
    // counters since boot (rate() works over any scrape interval), gauges for levels
    for name in [
        "oslab_context_switches_total ",
        "oslab_pages_in_bytes_total ",
        "oslab_cpu_seconds_total{mode=\"idle\"} ",
        "oslab_device_read_bytes_total{device=",
        "oslab_device_io_time_seconds_total{device=",
        "oslab_build_info{version=",
        "oslab_run_queue ",
        "oslab_load1 ",
    ] {
        assert!(body.contains(name), "{name} missing");
    }
    assert!(!body.contains("per_second"));
    // devices that never did any I/O since boot are left out
    let diskstats = std::fs::read_to_string("/proc/diskstats").unwrap();
    for l in diskstats.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let ios: u64 = [3, 7, 14]
            .iter()
            .filter_map(|i| f.get(*i)?.parse::<u64>().ok())
            .sum();
        if ios == 0 {
            assert!(!body.contains(&format!("device=\"{}\"", f[2])), "{}", f[2]);
        }
    }
    assert!(missing.is_err(), "other paths are 404");
}

/// `oslab watch --quiet --prometheus 127.0.0.1:0`, killed when dropped.
struct Exporter {
    child: Child,
    addr: SocketAddr,
}

impl Exporter {
    /// Starts the exporter sampling every 0.1 s for five minutes at most.
    fn start() -> Exporter {
        Exporter::start_with(&["--interval", "100ms", "--count", "3000"])
    }

    /// Starts `oslab watch ARGS --quiet --prometheus 127.0.0.1:0`.
    fn start_with(args: &[&str]) -> Exporter {
        let mut child = Command::new(cargo_bin("oslab"))
            .arg("watch")
            .args(args)
            .args(["--quiet", "--prometheus", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("oslab names its address").unwrap();
            if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                break url["http://".len()..]
                    .trim_end_matches("/metrics")
                    .parse()
                    .unwrap();
            }
        };
        // Whatever oslab writes to stderr later must not block it.
        std::thread::spawn(move || lines.for_each(drop));
        let ex = Exporter { child, addr };
        // The first interval needs 0.1 s; the endpoint says 503 until then.
        let deadline = Instant::now() + Duration::from_secs(30);
        while ex.get("/metrics").0 != 200 {
            assert!(Instant::now() < deadline, "no metrics after 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        ex
    }

    /// One `GET path` on a fresh connection, accepting what Prometheus accepts:
    /// (status, content type, body); status 0 when the connection closed without a
    /// response.
    fn get(&self, path: &str) -> (u16, String, String) {
        self.get_accepting(path, PROMETHEUS_ACCEPT)
    }

    /// [`Exporter::get`] with this Accept header (none when empty).
    fn get_accepting(&self, path: &str, accept: &str) -> (u16, String, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
        let accept = if accept.is_empty() {
            String::new()
        } else {
            format!("Accept: {accept}\r\n")
        };
        let _ = write!(s, "GET {path} HTTP/1.1\r\nHost: oslab\r\n{accept}\r\n");
        parse_response(&read_all(&mut s))
    }

    /// Socket descriptors the exporter holds open now.
    fn sockets(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|t| t.to_string_lossy().starts_with("socket:"))
            .count()
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads until the peer closes (or resets) the connection; panics if it stays open
/// for a minute.
fn read_all(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                assert!(
                    !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "the server kept the connection open for a minute"
                );
                return got;
            }
        }
    }
}

fn parse_response(raw: &[u8]) -> (u16, String, String) {
    let text = String::from_utf8_lossy(raw);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return (0, String::new(), String::new());
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, ctype, body.to_string())
}

#[test]
fn idle_connections_neither_starve_the_endpoint_nor_stay_forever() {
    let ex = Exporter::start();
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(ex.addr).unwrap())
        .collect();
    // While all 200 are open and silent, a fresh scrape is answered in full.
    let (status, ctype, body) = ex.get("/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(check_openmetrics(&body) >= 19);
    // The server was handed all 200 before the scrape (one accept queue, in order)
    // but holds no more than its connection limit (32) of them.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut held = ex.sockets();
    while held > 100 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        held = ex.sockets();
    }
    assert!(held <= 100, "the exporter holds {held} sockets");
    // Every idle connection is closed by the server: at once past the limit, the
    // rest after the read timeout (5 s). read_all panics on one still open a minute on.
    for mut s in idle {
        let got = read_all(&mut s);
        assert!(
            !got.starts_with(b"HTTP/1.1 200"),
            "an idle client got metrics"
        );
    }
    assert_eq!(ex.get("/metrics").0, 200, "still answering afterwards");
    assert_eq!(ex.get("/other").0, 404, "other paths are 404");
}

#[test]
fn a_trickling_client_is_cut_off_after_the_read_timeout() {
    let ex = Exporter::start();
    let mut s = TcpStream::connect(ex.addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\n").unwrap();
    // One short header line every 0.2 s keeps every single read short of the
    // timeout; the server must still give up on the request as a whole.
    let start = Instant::now();
    let mut closed = false;
    for i in 0.. {
        if write!(s, "X-Slow-{i}: y\r\n").is_err() {
            closed = true;
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(closed, "the server kept a trickling request open for 30 s");
    assert_eq!(ex.get("/metrics").0, 200, "still answering afterwards");
}

#[test]
fn a_one_mebibyte_header_is_refused() {
    let ex = Exporter::start();
    let mut s = TcpStream::connect(ex.addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    let big = "a".repeat(1 << 20);
    // The server may close the connection before the whole request is written.
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: oslab\r\nX-Big: {big}\r\n\r\n"
    );
    let (status, _, body) = parse_response(&read_all(&mut s));
    assert!(
        status == 0 || (400..500).contains(&status),
        "status {status}: {body}"
    );
    let (status, _, body) = ex.get("/metrics");
    assert_eq!(status, 200, "still answering afterwards: {body}");
    assert!(check_openmetrics(&body) >= 19);
}

/// Runs `oslab watch ARGS` with a fixed terminal width; returns its standard output.
fn watch_output(args: &[&str]) -> String {
    let out = common::succeed(
        common::oslab()
            .arg("watch")
            .args(args)
            .env("COLUMNS", "120"),
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_recording_replays_to_the_same_table_json_and_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    let (rec, live_json, replay_json) = (
        tmp.path().join("w.rec"),
        tmp.path().join("live.json"),
        tmp.path().join("replay.json"),
    );
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let live = watch_output(&[
        "--interval",
        "100ms",
        "--count",
        "4",
        "--per-cpu",
        "--record",
        &path(&rec),
        "--json",
        &path(&live_json),
    ]);
    let replayed = watch_output(&[
        "--from",
        &path(&rec),
        "--per-cpu",
        "--json",
        &path(&replay_json),
    ]);
    assert_eq!(
        replayed, live,
        "the replay prints what the live run printed"
    );
    let (a, b) = (
        std::fs::read_to_string(&live_json).unwrap(),
        std::fs::read_to_string(&replay_json).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(a.lines().count(), 4);
    // sar -P ALL: a line per CPU under each interval, the same CPUs in JSON, and
    // each CPU's shares add up to all of its time
    let mut in_json = 0;
    for line in a.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let per = v["per_cpu"].as_object().unwrap();
        assert!(!per.is_empty());
        in_json += per.len();
        for shares in per.values() {
            let sum: f64 = ["user", "nice", "system", "iowait", "steal", "idle"]
                .iter()
                .map(|k| shares[k].as_f64().unwrap())
                .sum();
            assert!((sum - 100.0).abs() < 0.5, "{shares}");
        }
    }
    assert_eq!(
        live.lines().filter(|l| l.starts_with("  cpu")).count(),
        in_json,
        "{live}"
    );
    // --count and --once cut a replay as they cut a live run
    let once = watch_output(&["--from", &path(&rec), "--once", "--json", "-"]);
    assert_eq!(once.lines().count(), 1);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(once.lines().next().unwrap()).unwrap()["unix_time_s"],
        serde_json::from_str::<serde_json::Value>(a.lines().next().unwrap()).unwrap()["unix_time_s"]
    );
    // the metrics of the replay's last sample, served as a live run serves them
    let last: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&rec)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    let ex = Exporter::start_with(&["--from", &path(&rec)]);
    let (status, _, body) = ex.get("/metrics");
    assert_eq!(status, 200);
    let ctxt = last["snapshot"]["ctxt"].as_u64().unwrap();
    assert!(
        body.contains(&format!("\noslab_context_switches_total {ctxt}\n")),
        "{body}"
    );
    assert!(body.contains("oslab_cpu_core_seconds_total{cpu=\"0\""));
}

#[test]
fn what_is_not_a_recording_is_refused_before_anything_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results.json");
    std::fs::write(&results, "{\"results\": []}\n").unwrap();
    for (file, says) in [
        (
            results.to_str().unwrap(),
            "is not a recording of oslab watch",
        ),
        ("/dev/zero", "not a regular file"),
    ] {
        let out = Command::new(cargo_bin("oslab"))
            .args(["watch", "--from", file])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_replay_never_writes_over_its_recording_and_takes_the_largest_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("w.rec");
    let rec_s = rec.to_str().unwrap();
    watch_output(&["--interval", "50ms", "--count", "2", "--record", rec_s]);
    let before = std::fs::read_to_string(&rec).unwrap();
    // --json naming the recording itself is refused, and the recording is intact
    let out = common::oslab()
        .args(["watch", "--from", rec_s, "--json", rec_s])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("that is the recording --from replays"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&rec).unwrap(), before);
    // --json and --record naming one file are refused before either is written
    let both = tmp.path().join("both");
    let out = common::oslab()
        .args(["watch", "--count", "1", "--json"])
        .arg(&both)
        .arg("--record")
        .arg(&both)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!both.exists());
    // a bad --device leaves no --json file behind
    let json = tmp.path().join("out.json");
    let out = common::oslab()
        .args(["watch", "--from", rec_s, "--device", "nosuch", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!json.exists());
    // counters at u64::MAX (a hand-made file, not a kernel's) replay without a panic,
    // metrics included
    let mut lines: Vec<serde_json::Value> = before
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for l in lines.iter_mut().skip(1) {
        for d in l["snapshot"]["disks"].as_object_mut().unwrap().values_mut() {
            d["reads"] = serde_json::json!(u64::MAX);
            d["writes"] = serde_json::json!(u64::MAX);
        }
        l["snapshot"]["ctxt"] = serde_json::json!(u64::MAX);
    }
    let hostile = tmp.path().join("hostile.rec");
    std::fs::write(
        &hostile,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let ex = Exporter::start_with(&["--from", hostile.to_str().unwrap()]);
    let (status, _, body) = ex.get("/metrics");
    assert_eq!(status, 200);
    assert!(
        body.contains(&format!("oslab_context_switches_total {}", u64::MAX as f64)),
        "{body}"
    );
}
