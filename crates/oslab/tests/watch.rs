//! `oslab watch`: text, JSON lines, and the OpenMetrics endpoint scraped over HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use assert_cmd::cargo::cargo_bin;
use predicates::prelude::*;

#[test]
fn text_view_has_units_and_one_line_per_interval() {
    let out = assert_cmd::Command::cargo_bin("oslab")
        .unwrap()
        .args(["watch", "--interval", "0.05", "--count", "3"])
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
        .args(["watch", "--interval", "0.05", "--count", "2", "--json"])
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
        .stderr(predicate::str::contains("cannot listen"));
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
    let mut samples = 0;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "ends with # EOF");
    for l in &lines[..lines.len() - 1] {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap();
            assert!(valid_name(name), "{name}");
            assert!(["gauge", "counter"].contains(&it.next().unwrap()));
            assert!(
                !families.contains(&name.to_string()),
                "family declared twice: {name}"
            );
            families.push(name.to_string());
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
            assert_eq!(
                families.last().map(String::as_str),
                Some(name),
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

#[test]
fn prometheus_endpoint_serves_openmetrics() {
    let mut child = Command::new(cargo_bin("oslab"))
        .args([
            "watch",
            "--interval",
            "0.05",
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
        match ureq::get(&url).call() {
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
    assert!(body.contains("oslab_device_utilization_ratio{device="));
    assert!(missing.is_err(), "other paths are 404");
}
