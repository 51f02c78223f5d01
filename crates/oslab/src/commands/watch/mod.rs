//! `oslab watch`: the sampler, live, or a recording of it replayed ([`replay`]).

use clap::Args;
use oslab_arg_values::{seconds, whole};

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use oslab_metrics_server::Latest;
use oslab_report::watch;
use oslab_sys::clock::{local_hms, local_hms_of, monotonic_ns, unix_time_s};
use oslab_sys::fsread::Root;
use oslab_sys::infile;
use oslab_sys::sar::{DiskCounters, Snapshot, derive, per_cpu_shares, snapshot};
use oslab_sys::sar_record::{self, Header, Sample};

mod replay;

use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::{Stream, print};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Time between samples, e.g. 1s or 500ms (10ms to 3600s)
    #[arg(long, value_name = "DURATION", default_value = "1s", allow_negative_numbers = true, value_parser = seconds(0.01, 3600.0))]
    pub interval: f64,
    /// Print one interval and exit
    #[arg(long, conflicts_with = "count")]
    pub once: bool,
    /// Stop after N intervals
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole(1, u64::MAX))]
    pub count: Option<u64>,
    /// Also write one JSON object per interval, a line each, to FILE (`-` for
    /// standard output, which then holds only the JSON)
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Only these devices (repeatable); default: every device that moved data
    #[arg(long = "device", value_name = "NAME")]
    pub devices: Vec<String>,
    /// Serve the latest values at http://ADDR/metrics in OpenMetrics text, e.g. 127.0.0.1:9464
    #[arg(long, value_name = "ADDR")]
    pub prometheus: Option<String>,
    /// With --prometheus: print nothing, only serve
    #[arg(long)]
    pub quiet: bool,
    /// Also show each CPU's shares under the all-CPU columns (sar -P ALL)
    #[arg(long)]
    pub per_cpu: bool,
    /// Also record every sample's raw counters to FILE, a JSON object a line, for
    /// `--from FILE` to replay later (sadc's file)
    #[arg(long, value_name = "FILE", conflicts_with = "from")]
    pub record: Option<std::path::PathBuf>,
    /// Replay a recording made with --record instead of sampling: the same tables,
    /// JSON and metrics, with the recorded times (sar -f)
    #[arg(long, value_name = "FILE", conflicts_with = "interval")]
    pub from: Option<std::path::PathBuf>,
}

const HEADER_EVERY: u64 = 20;

/// Runs once, into nothing, everything an interval runs, so that the pages of
/// oslab's own code and data are in before the first interval's baseline: else
/// the first interval counts oslab's start-up (page-ins, faults, context
/// switches) as the system's.
fn warm_up(root: &Root, bands: &[Vec<usize>]) {
    let a = snapshot(root);
    let b = snapshot(root);
    if let Some(r) = derive(&a, &b, a.t_ns) {
        let cpus = per_cpu_shares(&a, &b);
        let _ = watch::line(&local_hms(), &r, &[], bands);
        let _ = watch::json_line(unix_time_s(), &r, &cpus);
        let _ = watch::per_cpu_lines(&cpus);
    }
    let _ = watch::openmetrics(&b, "", oslab_sys::machine::page_size());
}

/// Every `--device` must name a block device of /proc/diskstats: a name that
/// matches none would show nothing, silently.
/// `place` says where the devices are: "here", or "in FILE" for a replay.
fn check_devices(
    named: &[String],
    known: &BTreeMap<String, DiskCounters>,
    place: &str,
) -> Result<(), Failure> {
    match named.iter().find(|n| !known.contains_key(*n)) {
        None => Ok(()),
        Some(bad) => Err(Failure::usage(format!(
            "--device {bad}: no block device of that name {place} (devices: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.keys().cloned().collect::<Vec<_>>().join(", ")
            }
        ))),
    }
}

/// Listens on `addr` for --prometheus: an address that is not one is a usage
/// error, a well-formed one that cannot be had (in use, not this machine's, a
/// port only root may take) a failure at run time.
fn listen(addr: &str) -> Result<TcpListener, Failure> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| {
            Failure::usage(format!(
                "--prometheus {addr}: not an address to listen on such as 127.0.0.1:9464 ({e})"
            ))
        })?
        .collect();
    if addrs.is_empty() {
        return Err(Failure::usage(format!(
            "--prometheus {addr}: names no address to listen on"
        )));
    }
    TcpListener::bind(&addrs[..])
        .map_err(|e| Failure::runtime(format!("cannot listen on {addr}: {e}")))
}

/// Where each interval goes: the table, the JSON lines, the metrics endpoint.
struct Shown {
    text: bool,
    json: Option<Stream>,
    /// What the metrics endpoint serves; None when nothing serves it.
    latest: Option<Arc<Latest>>,
    /// The sampled machine's page size.
    page_bytes: u64,
    bands: Vec<Vec<usize>>,
    devices: Vec<String>,
    per_cpu: bool,
    intervals: u64,
}

impl Shown {
    /// Gives the metrics endpoint the counters of `s`.
    fn serve_counters(&self, s: &Snapshot) {
        let Some(latest) = &self.latest else {
            return;
        };
        let version = env!("CARGO_PKG_VERSION");
        latest.set(vec![
            (
                watch::OPENMETRICS_CONTENT_TYPE,
                watch::openmetrics(s, version, self.page_bytes),
            ),
            (
                watch::TEXT_CONTENT_TYPE,
                watch::text_format(s, version, self.page_bytes),
            ),
        ]);
    }

    /// Shows the interval from `prev` to `cur`, which ended at `unix_s`.
    fn interval(&mut self, prev: &Snapshot, cur: &Snapshot, origin: u64, unix_s: f64) {
        let Some(r) = derive(prev, cur, origin) else {
            return;
        };
        let cpus = if self.per_cpu {
            per_cpu_shares(prev, cur)
        } else {
            BTreeMap::new()
        };
        if let Some(s) = self.json.as_mut() {
            s.put(&watch::json_line(unix_s, &r, &cpus));
        }
        if self.text {
            if self.intervals % HEADER_EVERY == 0 {
                print(&watch::header(&self.bands));
            }
            let devices = watch::shown_devices(&r, &self.devices);
            print(&watch::line(
                &local_hms_of(unix_s),
                &r,
                &devices,
                &self.bands,
            ));
            print(&watch::per_cpu_lines(&cpus));
        }
        self.intervals += 1;
    }

    fn close(self) -> CmdResult {
        self.json.map_or(Ok(()), Stream::close).map(|()| 0)
    }
}

pub fn run(a: WatchArgs) -> CmdResult {
    crate::pending::warn_if_pending();
    if !(a.interval.is_finite() && (0.01..=3600.0).contains(&a.interval)) {
        return Err(Failure::usage(format!(
            "--interval {} is out of range: give 0.01 to 3600 seconds",
            a.interval
        )));
    }
    if a.quiet && a.prometheus.is_none() {
        return Err(Failure::usage("--quiet only makes sense with --prometheus"));
    }
    let json_on_stdout = a.json.as_deref().is_some_and(crate::output::is_stdout);
    let record_on_stdout = a.record.as_deref().is_some_and(crate::output::is_stdout);
    if json_on_stdout && record_on_stdout {
        return Err(Failure::usage(
            "--json - and --record - would both write to standard output: give one a file",
        ));
    }
    // Everything that can refuse the command is checked before any file is opened
    // for writing (opening empties it).
    let text = match &a.from {
        Some(path) => Some(replay::read(path, a.json.as_deref())?),
        None => None,
    };
    let recording = match (&text, &a.from) {
        (Some(t), Some(path)) => {
            let r = replay::check(t, path)?;
            let place = format!("in {}", infile::display_name(path));
            let first = r.samples().next().map(|s| s.snapshot.disks);
            check_devices(&a.devices, &first.unwrap_or_default(), &place)?;
            Some(r)
        }
        _ => {
            check_devices(&a.devices, &snapshot(&Root::live()).disks, "here")?;
            None
        }
    };
    // bound now, so a bad or busy address fails before any work; served from when
    // there is something to serve (a replay: its last interval)
    let listener = a.prometheus.as_deref().map(listen).transpose()?;
    check_outputs(a.json.as_deref(), a.record.as_deref())?;
    // --quiet prints nothing on standard output; a file is not printed
    let json = match &a.json {
        Some(_) if json_on_stdout && a.quiet => None,
        Some(p) => Some(Stream::open(p, "--json")?),
        None => None,
    };
    let record = match &a.record {
        Some(p) => Some(Stream::open(p, "--record")?),
        None => None,
    };
    let page_bytes = recording
        .as_ref()
        .map(|r| r.header.page_bytes)
        .filter(|p| *p > 0)
        .unwrap_or_else(oslab_sys::machine::page_size);
    let shown = Shown {
        text: !json_on_stdout && !a.quiet && !record_on_stdout,
        json,
        latest: listener.as_ref().map(|_| Arc::new(Latest::new())),
        page_bytes,
        bands: watch::bands(crate::term::width()),
        devices: a.devices.clone(),
        per_cpu: a.per_cpu,
        intervals: 0,
    };
    let count = if a.once { Some(1) } else { a.count };
    match recording {
        Some(r) => replay::replay(&r, shown, count, listener),
        None => {
            if let (Some(l), Some(latest)) = (listener, &shown.latest) {
                serve(l, latest.clone())?;
            }
            live(a.interval, shown, record, count)
        }
    }
}

/// Both output files can be written, and are not one file (each would empty it);
/// checked before either is opened.
fn check_outputs(json: Option<&Path>, record: Option<&Path>) -> Result<(), Failure> {
    let files: Vec<(&Path, &str)> = [(json, "--json"), (record, "--record")]
        .into_iter()
        .filter_map(|(p, flag)| Some((p?, flag)))
        .filter(|(p, _)| !crate::output::is_stdout(p))
        .collect();
    for (p, flag) in &files {
        crate::output::check_file_target(p, flag)?;
    }
    if let [(j, _), (r, _)] = files[..] {
        if one_file(j, r) || std::path::absolute(j).ok() == std::path::absolute(r).ok() {
            return Err(Failure::usage(format!(
                "--json and --record both name {}: give each its own file",
                j.display()
            )));
        }
    }
    Ok(())
}

/// Whether two existing paths are one file (the same inode on the same device).
fn one_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Serves the latest metrics on `listener` from a thread of its own.
fn serve(listener: TcpListener, latest: Arc<Latest>) -> Result<(), Failure> {
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::runtime(e.to_string()))?;
    eprintln!(
        "oslab: serving metrics at http://{bound}/metrics (OpenMetrics or the classic text format, as the client asks)"
    );
    oslab_metrics_server::spawn(listener, latest).map_err(|e| Failure::runtime(e.to_string()))
}

fn live(
    interval_s: f64,
    mut shown: Shown,
    mut record: Option<Stream>,
    count: Option<u64>,
) -> CmdResult {
    let root = Root::live();
    let step = (interval_s * 1e9) as u64;
    warm_up(&root, &shown.bands);
    let mut prev = snapshot(&root);
    if let Some(r) = record.as_mut() {
        r.put(&sar_record::line(&Header {
            oslab_watch_record: sar_record::FORMAT,
            host: root
                .read_trim("/proc/sys/kernel/hostname")
                .unwrap_or_default(),
            kernel: root
                .read_trim("/proc/sys/kernel/osrelease")
                .unwrap_or_default(),
            interval_s,
            page_bytes: shown.page_bytes,
        }));
        r.put(&sar_record::line(&Sample::of(unix_time_s(), &prev)));
    }
    let origin = prev.t_ns;
    let mut n = 0u64;
    loop {
        // Sleep to the next point of a fixed grid so the intervals do not drift.
        let target = origin + (n + 1) * step;
        let now = monotonic_ns();
        if target > now {
            std::thread::sleep(Duration::from_nanos(target - now));
        }
        let cur = snapshot(&root);
        let unix_s = unix_time_s();
        if let Some(r) = record.as_mut() {
            r.put(&sar_record::line(&Sample::of(unix_s, &cur)));
        }
        shown.serve_counters(&cur);
        shown.interval(&prev, &cur, origin, unix_s);
        prev = cur;
        n += 1;
        if count.is_some_and(|c| n >= c) {
            record.map_or(Ok(()), Stream::close)?;
            return shown.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_is_not_there_is_refused_naming_those_that_are() {
        let mut known = BTreeMap::new();
        known.insert("vda".to_string(), DiskCounters::default());
        known.insert("vda1".to_string(), DiskCounters::default());
        assert!(check_devices(&["vda1".into()], &known, "here").is_ok());
        assert!(check_devices(&[], &known, "here").is_ok());
        let f = check_devices(&["vda1".into(), "nosuchdev".into()], &known, "here").unwrap_err();
        assert_eq!(f.code, crate::failure::EXIT_USAGE);
        assert_eq!(
            f.message,
            "--device nosuchdev: no block device of that name here (devices: vda, vda1)"
        );
    }

    #[test]
    fn a_malformed_address_is_a_usage_error_a_busy_port_a_runtime_failure() {
        for bad in ["9464", "localhost", "127.0.0.1:99999", "::1:80:x", ""] {
            let f = listen(bad).unwrap_err();
            assert_eq!(f.code, crate::failure::EXIT_USAGE, "{bad}: {}", f.message);
        }
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let f = listen(&addr).unwrap_err();
        assert_eq!(f.code, crate::failure::EXIT_RUNTIME, "{}", f.message);
        assert!(f.message.starts_with(&format!("cannot listen on {addr}: ")));
    }
}
