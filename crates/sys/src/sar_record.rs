//! A recording of `oslab watch` (`--record FILE`), replayed by `--from FILE`: the
//! raw counters of every sample rather than the rates, so a replay derives the same
//! tables, JSON lines and metrics as the live run did (what sadc's data file is to
//! `sar -f`, in JSON lines).
//!
//! The first line is a [`Header`]; every other line is one [`Sample`]. A recording
//! is input from outside when replayed (oslab may run as root, the file may be
//! anyone's): it is read through `infile` (a regular file, at most a limit of
//! bytes), and every line is checked before any of it is shown: a known format,
//! times that only move forwards, Unix times of this era.

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

/// The header and samples of a recording's text; `name` is how errors name it.
/// Every problem is one sentence naming the line.
pub fn parse(text: &str, name: &str) -> Result<(Header, Vec<Sample>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let not_one = || {
        format!(
            "{name} is not a recording of oslab watch (write one with `oslab watch --record FILE`)"
        )
    };
    let (_, first) = lines.next().ok_or_else(|| format!("{name} is empty"))?;
    let value: serde_json::Value = serde_json::from_str(first).map_err(|_| not_one())?;
    let version = value.get("oslab_watch_record").ok_or_else(not_one)?;
    if version.as_u64() != Some(u64::from(FORMAT)) {
        return Err(format!(
            "{name} is a recording in format {version}; this oslab reads format {FORMAT}"
        ));
    }
    let header: Header = serde_json::from_value(value)
        .map_err(|e| format!("{name} line 1: not a recording's header: {e}"))?;
    let mut samples: Vec<Sample> = Vec::new();
    for (i, l) in lines {
        let at = |why: String| format!("{name} line {}: {why}", i + 1);
        let s: Sample = serde_json::from_str(l).map_err(|e| at(format!("not a sample: {e}")))?;
        if !(0.0..=UNIX_TIME_MAX).contains(&s.unix_time_s) {
            return Err(at(format!(
                "its time {} is no Unix time of this era",
                s.unix_time_s
            )));
        }
        if let Some(prev) = samples.last()
            && s.snapshot.t_ns <= prev.snapshot.t_ns
        {
            return Err(at(
                "its clock reading does not follow the line before".into()
            ));
        }
        samples.push(s);
    }
    Ok((header, samples))
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
        let (h, samples) = parse(&text, "r.jsonl").unwrap();
        assert_eq!(h, header());
        assert_eq!(samples, vec![a.clone(), b]);
        assert_eq!(samples[0].restored().per_cpu, a.per_cpu);
        assert!(!a.per_cpu.is_empty());
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
        ];
        for (text, want) in cases {
            let e = parse(&text, "r").unwrap_err();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
