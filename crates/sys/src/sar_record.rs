//! A recording of `oslab watch` (`--record FILE`), replayed by `--from FILE`: the
//! raw counters of every sample rather than the rates, so a replay derives the same
//! tables, JSON lines and metrics as the live run did (what sadc's data file is to
//! `sar -f`, in JSON lines).
//!
//! The first line is a [`Header`]; every other line is one [`Sample`]. A recording
//! is input from outside when replayed (oslab may run as root, the file may be
//! anyone's): it is read through `infile` (a regular file, at most a limit of
//! bytes), and every line is checked before any of it is shown: a known format,
//! times that only move forwards, Unix times of this era, device names of
//! printable characters (they reach root's terminal and metric labels; the host
//! and kernel named in the header are shown escaped).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::parse::procstat::CpuTimes;
use crate::sar::Snapshot;

/// The format this oslab writes and reads.
pub const FORMAT: u32 = 1;

/// Unix times a sample may carry: 1970 up to the year 5138 (a bound so that a
/// hostile file cannot hand the clock formatting a time it cannot show).
const UNIX_TIME_MAX: f64 = 1e11;

/// The recording's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The format's version; its name marks the file as a recording.
    pub oslab_watch_record: u32,
    pub host: String,
    pub kernel: String,
    /// The interval asked for, seconds (each sample carries its own time).
    pub interval_s: f64,
    /// The recording machine's page size (vmstat's dirty thresholds are in
    /// pages); 0 where unknown.
    #[serde(default)]
    pub page_bytes: u64,
}

/// One sample: the counters of one instant, with its Unix time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub unix_time_s: f64,
    pub snapshot: Snapshot,
    /// Each CPU's times (a snapshot does not serialise them itself).
    #[serde(default)]
    pub per_cpu: BTreeMap<u32, CpuTimes>,
}

impl Sample {
    pub fn of(unix_time_s: f64, snapshot: &Snapshot) -> Sample {
        let mut snapshot = snapshot.clone();
        let per_cpu = std::mem::take(&mut snapshot.per_cpu);
        Sample {
            unix_time_s,
            snapshot,
            per_cpu,
        }
    }

    /// The snapshot with its per-CPU times back in place.
    pub fn restored(&self) -> Snapshot {
        let mut s = self.snapshot.clone();
        s.per_cpu.clone_from(&self.per_cpu);
        s
    }
}

/// A line of JSON and its newline.
pub fn line<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string(value).expect("a recording's line serialises");
    s.push('\n');
    s
}

/// A recording's text, checked whole: its header, and its samples to be read one
/// at a time (so a replay holds the text and one sample, not every sample).
pub struct Recording<'t> {
    pub header: Header,
    lines: Vec<&'t str>,
}

impl<'t> Recording<'t> {
    /// Reads `text` (`name` is how errors name it) and checks every line before
    /// anything of it is used. Every problem is one sentence naming the line.
    pub fn check(text: &'t str, name: &str) -> Result<Recording<'t>, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or_else(|| format!("{name} is empty"))?;
        let header = header(first, name)?;
        let mut kept = Vec::new();
        let mut last_t = None;
        for (i, l) in lines {
            let at = |why: String| format!("{name} line {}: {why}", i + 1);
            let s = sample(l).map_err(at)?;
            if last_t.is_some_and(|t| s.snapshot.t_ns <= t) {
                return Err(at(
                    "its clock reading does not follow the line before".into()
                ));
            }
            last_t = Some(s.snapshot.t_ns);
            kept.push(l);
        }
        Ok(Recording {
            header,
            lines: kept,
        })
    }

    /// How many samples it holds.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The samples in order (each line parsed again; [`Recording::check`] has
    /// seen them all).
    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        self.lines.iter().filter_map(|l| sample(l).ok())
    }
}

fn header(line: &str, name: &str) -> Result<Header, String> {
    let not_one = || {
        format!(
            "{name} is not a recording of oslab watch (write one with `oslab watch --record FILE`)"
        )
    };
    let value: serde_json::Value = serde_json::from_str(line).map_err(|_| not_one())?;
    let version = value
        .get("oslab_watch_record")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(not_one)?;
    if version != u64::from(FORMAT) {
        return Err(format!(
            "{name} is a recording in format {version}; this oslab reads format {FORMAT}"
        ));
    }
    let h: Header = serde_json::from_value(value)
        .map_err(|e| format!("{name} line 1: not a recording's header: {}", short(&e)))?;
    if !(h.interval_s.is_finite() && h.interval_s > 0.0) {
        return Err(format!(
            "{name} line 1: its interval is not a positive number"
        ));
    }
    let page_ok = h.page_bytes.is_power_of_two() && (4096..=1 << 20).contains(&h.page_bytes);
    if h.page_bytes != 0 && !page_ok {
        return Err(format!(
            "{name} line 1: its page size {} is no page size (4 KiB to 1 MiB, a power of two)",
            h.page_bytes
        ));
    }
    Ok(h)
}

/// One sample line, checked: a Unix time of this era and device names as the
/// kernel gives them (a name is printed on root's terminal and served as a metric
/// label, so a control character or a quote must not get through).
fn sample(line: &str) -> Result<Sample, String> {
    let s: Sample =
        serde_json::from_str(line).map_err(|e| format!("not a sample: {}", short(&e)))?;
    if !(0.0..=UNIX_TIME_MAX).contains(&s.unix_time_s) {
        return Err(format!(
            "its time {} is no Unix time of this era",
            s.unix_time_s
        ));
    }
    if let Some(bad) = s.snapshot.disks.keys().find(|n| !plain(n)) {
        let start: String = bad.chars().take(64).collect();
        return Err(format!(
            "the device name {start:?} is not one the kernel gives"
        ));
    }
    Ok(s)
}

/// 1 to 64 printable ASCII characters, no space: every block device name the
/// kernel gives (nvme0n1p1, dm-0, md_home, ubiblock0_0, cciss/c0d0) is one.
fn plain(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

/// An error's text, at most 160 characters of it (serde quotes what it could not
/// take, which in a hostile file can be a line of a gigabyte).
fn short(e: &dyn std::fmt::Display) -> String {
    let s = e.to_string();
    match s.char_indices().nth(160) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            oslab_watch_record: FORMAT,
            host: "vm".into(),
            kernel: "6.18".into(),
            interval_s: 1.0,
            page_bytes: 4096,
        }
    }

    fn sample(t_ns: u64, unix: f64) -> Sample {
        let mut snap = Snapshot {
            t_ns,
            ctxt: t_ns / 1000,
            ..Snapshot::default()
        };
        snap.per_cpu.insert(
            1,
            CpuTimes {
                user: t_ns / 1_000_000,
                ..CpuTimes::default()
            },
        );
        Sample::of(unix, &snap)
    }

    #[test]
    fn a_recording_reads_back_as_written_per_cpu_times_included() {
        let (a, b) = (
            sample(1_000_000_000, 1.8e9),
            sample(2_000_000_000, 1.8e9 + 1.0),
        );
        let text = line(&header()) + &line(&a) + "\n" + &line(&b);
        let r = Recording::check(&text, "r.jsonl").unwrap();
        assert_eq!(r.header, header());
        assert_eq!(r.len(), 2);
        let samples: Vec<Sample> = r.samples().collect();
        assert_eq!(samples, vec![a.clone(), b]);
        assert_eq!(samples[0].restored().per_cpu, a.per_cpu);
        assert!(!a.per_cpu.is_empty());
    }

    /// A sample line whose one device is called `name`.
    fn disk_named(name: &str) -> String {
        let mut s = sample(2, 1.8e9);
        s.snapshot.disks.insert(name.into(), Default::default());
        line(&s)
    }

    #[test]
    fn every_device_name_the_kernel_gives_reads_back() {
        let h = line(&header());
        for name in [
            "nvme0n1p1",
            "dm-0",
            "md_home",
            "ubiblock0_0",
            "cciss/c0d0",
            "sr0",
        ] {
            let text = h.clone() + &disk_named(name);
            let r = Recording::check(&text, "r").unwrap();
            assert!(
                r.samples()
                    .next()
                    .unwrap()
                    .snapshot
                    .disks
                    .contains_key(name)
            );
        }
        let long = "x".repeat(10_000);
        let e = Recording::check(&(h + &disk_named(&long)), "r")
            .err()
            .unwrap();
        assert!(e.len() < 300, "{}", e.len());
    }

    #[test]
    fn counters_at_their_largest_read_back() {
        let mut s = sample(2, 1.8e9);
        s.snapshot.ctxt = u64::MAX;
        s.snapshot.disks.insert(
            "vda".into(),
            crate::sar::DiskCounters {
                reads: u64::MAX,
                writes: u64::MAX,
                ..Default::default()
            },
        );
        let text = line(&header()) + &line(&s);
        let r = Recording::check(&text, "r").unwrap();
        assert_eq!(r.samples().next().unwrap(), s);
    }

    #[test]
    fn what_is_not_a_recording_is_refused_in_one_sentence() {
        let h = line(&header());
        let good = line(&sample(2, 1.8e9));
        let cases = [
            (String::new(), "r is empty"),
            ("{\"results\": []}\n".to_string(), "r is not a recording"),
            ("not json\n".to_string(), "r is not a recording"),
            (
                h.replace("\"oslab_watch_record\":1", "\"oslab_watch_record\":9"),
                "r is a recording in format 9; this oslab reads format 1",
            ),
            (
                h.clone() + "{\"unix_time_s\": 1}\n",
                "r line 2: not a sample",
            ),
            (
                h.clone() + &line(&sample(1, -5.0)),
                "r line 2: its time -5 is no Unix time",
            ),
            (
                h.clone() + &good + &good,
                "r line 3: its clock reading does not follow",
            ),
            (
                h.clone() + &disk_named("vda\u{1b}[2J"),
                "r line 2: the device name \"vda\\u{1b}[2J\" is not one the kernel gives",
            ),
            (
                h.clone() + &disk_named("a\"} 1\nfake_metric 9"),
                "r line 2: the device name",
            ),
            (
                h.replace("\"page_bytes\":4096", "\"page_bytes\":3"),
                "r line 1: its page size 3 is no page size",
            ),
            (
                h.replace("\"oslab_watch_record\":1", "\"oslab_watch_record\":\"1\""),
                "r is not a recording",
            ),
        ];
        for (text, want) in cases {
            let e = Recording::check(&text, "r").err().unwrap();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
