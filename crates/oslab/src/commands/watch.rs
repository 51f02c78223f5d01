//! `oslab watch`: the sampler, live.

use clap::Args;
use oslab_arg_values::{seconds, whole};

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use oslab_metrics_server::Latest;
use oslab_report::watch;
use oslab_sys::clock::{local_hms, monotonic_ns, unix_time_s};
use oslab_sys::fsread::Root;
use oslab_sys::sar::{DiskCounters, derive, snapshot};

use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::{Stream, print};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Seconds between samples (0.01 to 3600)
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, allow_negative_numbers = true, value_parser = seconds(0.01, 3600.0))]
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
        let _ = watch::line(&local_hms(), &r, &[], bands);
        let _ = watch::json_line(unix_time_s(), &r);
    }
    let _ = watch::openmetrics(&b, "");
}

/// Every `--device` must name a block device of /proc/diskstats: a name that
/// matches none would show nothing, silently.
fn check_devices(named: &[String], known: &BTreeMap<String, DiskCounters>) -> Result<(), Failure> {
    match named.iter().find(|n| !known.contains_key(*n)) {
        None => Ok(()),
        Some(bad) => Err(Failure::usage(format!(
            "--device {bad}: no block device of that name here (devices: {})",
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
    // --quiet prints nothing on standard output; a file is not printed
    let mut json = match &a.json {
        Some(_) if json_on_stdout && a.quiet => None,
        Some(p) => Some(Stream::open(p, "--json")?),
        None => None,
    };
    let latest = Arc::new(Latest::new());
    if let Some(addr) = &a.prometheus {
        let listener = listen(addr)?;
        let bound = listener
            .local_addr()
            .map_err(|e| Failure::runtime(e.to_string()))?;
        eprintln!(
            "oslab: serving metrics at http://{bound}/metrics (OpenMetrics or the classic text format, as the client asks)"
        );
        oslab_metrics_server::spawn(listener, latest.clone())
            .map_err(|e| Failure::runtime(e.to_string()))?;
    }
    let count = if a.once { Some(1) } else { a.count };
    let root = Root::live();
    check_devices(&a.devices, &snapshot(&root).disks)?;
    let step = (a.interval * 1e9) as u64;
    let bands = watch::bands(crate::term::width());
    warm_up(&root, &bands);
    let mut prev = snapshot(&root);
    let origin = prev.t_ns;
    let mut n = 0u64;
    let text = !json_on_stdout && !a.quiet;
    loop {
        // Sleep to the next point of a fixed grid so the intervals do not drift.
        let target = origin + (n + 1) * step;
        let now = monotonic_ns();
        if target > now {
            std::thread::sleep(Duration::from_nanos(target - now));
        }
        let cur = snapshot(&root);
        let version = env!("CARGO_PKG_VERSION");
        latest.set(vec![
            (
                watch::OPENMETRICS_CONTENT_TYPE,
                watch::openmetrics(&cur, version),
            ),
            (watch::TEXT_CONTENT_TYPE, watch::text_format(&cur, version)),
        ]);
        if let Some(r) = derive(&prev, &cur, origin) {
            if let Some(s) = json.as_mut() {
                s.put(&watch::json_line(unix_time_s(), &r));
            }
            if text {
                if n % HEADER_EVERY == 0 {
                    print(&watch::header(&bands));
                }
                let devices = watch::shown_devices(&r, &a.devices);
                print(&watch::line(&local_hms(), &r, &devices, &bands));
            }
        }
        prev = cur;
        n += 1;
        if count.is_some_and(|c| n >= c) {
            return json.map_or(Ok(()), Stream::close).map(|()| 0);
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
        assert!(check_devices(&["vda1".into()], &known).is_ok());
        assert!(check_devices(&[], &known).is_ok());
        let f = check_devices(&["vda1".into(), "nosuchdev".into()], &known).unwrap_err();
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
