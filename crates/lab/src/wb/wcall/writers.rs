//! The writers of a cell, as programs: the paced C writer (compiled when oslab was
//! built, written to the run's scratch folder), `dd`, or a user's command; started
//! directly under vanilla or through `oslab wcall run --name G` under a governor,
//! as a user would. Afterwards each file is checked byte for byte where its
//! content is known.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use oslab_trace::TraceOutcome;

use super::Plan;
use super::run_env::Env;
use oslab_harness::LabError;
use oslab_services::cells::record::{CHUNK, Content, PERIOD_MS, Scenario};
use oslab_services::timed_writer::WriterTrace;
use oslab_wcall::rendezvous::GovernorName;

/// The paced writer, compiled from paced_writer.c when oslab was built (build.rs).
#[cfg(oslab_paced_writer)]
const PACED_WRITER: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/paced_writer")));
#[cfg(not(oslab_paced_writer))]
const PACED_WRITER: Option<&[u8]> = None;

/// Puts the paced writer oslab carries into `dir` (the run's own scratch folder),
/// as a new file only its owner can run.
pub fn install_paced(dir: &Path) -> Result<PathBuf, String> {
    let Some(bytes) = PACED_WRITER else {
        return Err("this oslab was built without a C compiler, so it lacks the paced writer (install gcc and libc6-dev, and rebuild)".into());
    };
    let exe = dir.join("paced_writer");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&exe)
        .and_then(|mut f| f.write_all(bytes));
    written.map_err(|e| format!("{}: {e}", exe.display()))?;
    Ok(exe)
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriterKind {
    /// `count` writes of `bytes` every `period_ms`, at SCHED_FIFO `fifo` (0: not
    /// real-time) and `nice`.
    Paced {
        bytes: u64,
        period_ms: f64,
        count: u64,
        fifo: u32,
        nice: i32,
    },
    /// dd of 1 MiB blocks until stopped.
    Dd,
    /// A user's command line (`{file}` replaced).
    User(String),
}

/// dd's block size, bytes: each write() of a dd competitor.
pub const DD_BLOCK: u64 = 1 << 20;

#[derive(Debug, Clone)]
pub struct WriterPlan {
    pub name: String,
    pub kind: WriterKind,
    pub file: PathBuf,
    pub latency_file: PathBuf,
    /// Where its standard error goes, read back when it leaves no record.
    pub err_file: PathBuf,
}

impl WriterPlan {
    fn new(name: &str, kind: WriterKind) -> WriterPlan {
        WriterPlan {
            name: name.into(),
            kind,
            file: PathBuf::new(),
            latency_file: PathBuf::new(),
            err_file: PathBuf::new(),
        }
    }

    /// Names its files: the data on the testbed, the latencies and its standard
    /// error in the scratch.
    pub fn with_file(mut self, mount: &Path, scratch: &Path, tag: &str) -> WriterPlan {
        self.file = mount.join(format!("{tag}-{}.dat", self.name));
        self.latency_file = scratch.join(format!("{tag}-{}.lat", self.name));
        self.err_file = scratch.join(format!("{tag}-{}.err", self.name));
        self
    }

    fn argv(&self, e: &Env) -> Vec<String> {
        let file = self.file.display().to_string();
        match &self.kind {
            WriterKind::Paced {
                bytes,
                period_ms,
                count,
                fifo,
                nice,
            } => {
                let mut v = Vec::new();
                if *nice != 0 {
                    v.extend(["nice".into(), "-n".into(), nice.to_string()]);
                }
                v.extend([
                    e.paced.display().to_string(),
                    file,
                    bytes.to_string(),
                    ((period_ms * 1000.0) as u64).to_string(),
                    count.to_string(),
                    fifo.to_string(),
                    self.latency_file.display().to_string(),
                ]);
                v
            }
            WriterKind::Dd => vec![
                "dd".into(),
                "if=/dev/zero".into(),
                format!("of={file}"),
                format!("bs={DD_BLOCK}"),
            ],
            WriterKind::User(cmd) => {
                vec!["sh".into(), "-c".into(), cmd.replace("{file}", &file)]
            }
        }
    }

    /// Starts the writer: itself under vanilla, through `oslab wcall run --name`
    /// under the governor `governor`.
    pub fn launch(&self, e: &Env, governor: Option<&GovernorName>) -> Result<Launched, LabError> {
        let mut argv = self.argv(e);
        if !argv[0].contains('/') {
            argv = oslab_sys::program::resolve_argv(&argv).map_err(LabError::Failed)?;
        }
        let mut cmd = match governor {
            Some(g) => {
                use oslab_wcall::cli::{Launch, RunGroup, WcallRunArgs};
                Launch::Run(WcallRunArgs {
                    group: RunGroup::Auto,
                    name: Some(g.clone()),
                    private: false,
                    shared_socket: false,
                    policy: Default::default(),
                    command: argv,
                })
                .command(&e.exe)
            }
            None => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..])
                    .env("PATH", oslab_sys::program::trusted_path());
                c
            }
        };
        let stderr =
            std::fs::File::create(&self.err_file).map_or_else(|_| Stdio::null(), Stdio::from);
        cmd.stdout(Stdio::null()).stderr(stderr);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child =
            oslab_sys::signals::child_of_oslab(&mut cmd, oslab_sys::signals::OnParentDeath::Kill)
                .spawn()
                .map_err(|err| {
                    LabError::Failed(format!("cannot start writer {}: {err}", self.name))
                })?;
        let pid = child.id();
        let program_pid = if governor.is_some() {
            program_of(pid).unwrap_or(pid)
        } else {
            pid
        };
        Ok(Launched {
            child,
            program_pid,
            file: self.file.clone(),
            latency_file: self.latency_file.clone(),
            err_file: self.err_file.clone(),
            status: None,
            started_ns: oslab_sys::clock::monotonic_ns(),
        })
    }
}

/// The program `oslab wcall run` (pid `launcher`) started: its child.
fn program_of(launcher: u32) -> Option<u32> {
    let root = oslab_sys::fsread::Root::live();
    for _ in 0..200 {
        if let Some(c) = root
            .read_trim(&format!("/proc/{launcher}/task/{launcher}/children"))
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
        {
            return Some(c);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    None
}

/// A writer that runs.
pub struct Launched {
    pub child: Child,
    /// The writing program itself (the child of `oslab wcall run` when governed).
    pub program_pid: u32,
    pub file: PathBuf,
    pub latency_file: PathBuf,
    err_file: PathBuf,
    /// How it exited, once waited for.
    status: Option<std::process::ExitStatus>,
    started_ns: u64,
}

impl Launched {
    /// When it was started, seconds after `cell_start`.
    pub fn started_s(&self, cell_start: u64) -> Option<f64> {
        Some(self.started_ns.checked_sub(cell_start)? as f64 / 1e9)
    }

    /// SIGTERM to its process group (a governed one passes it on to its program).
    pub fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = oslab_sys::process::signal_group(self.child.id(), oslab_sys::signals::TERM);
        }
    }

    pub fn wait(&mut self) {
        self.status = self.child.wait().ok();
    }

    /// How it failed, when it exited unsuccessfully: the status and the end of
    /// its standard error.
    fn failure(&self) -> Option<String> {
        let status = self.status.filter(|s| !s.success())?;
        let err = String::from_utf8_lossy(&std::fs::read(&self.err_file).unwrap_or_default())
            .into_owned();
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Some(if tail.is_empty() {
            format!("it exited with {status}")
        } else {
            format!("it exited with {status}: {}", tail.join(" / "))
        })
    }

    /// The paced writer's own record of its writes: "start_ns latency_ns" a line.
    pub fn read_latencies(&self, cell_start: u64) -> WriterTrace {
        let text = std::fs::read_to_string(&self.latency_file).unwrap_or_default();
        let mut t = WriterTrace::default();
        for line in text.lines() {
            let mut f = line.split_whitespace().map(|x| x.parse::<u64>().ok());
            if let (Some(Some(at)), Some(Some(ns))) = (f.next(), f.next()) {
                t.start_s.push(at.saturating_sub(cell_start) as f64 / 1e9);
                t.latency_ms.push(ns as f64 / 1e6);
            }
        }
        t.bytes = std::fs::metadata(&self.file).map_or(0, |m| m.len());
        t.tid = self.program_pid;
        t.tgid = self.program_pid;
        if t.latency_ms.is_empty() {
            t.error = Some(format!(
                "the writer left no record of its writes in {}{}",
                self.latency_file.display(),
                self.failure().map(|f| format!("; {f}")).unwrap_or_default()
            ));
        }
        t
    }
}

/// A user's high writer's writes, from the kernel's trace of its write calls.
pub fn trace_from_kernel(outcome: &TraceOutcome, tgid: u32, cell_start: u64) -> WriterTrace {
    let mut t = WriterTrace {
        tid: tgid,
        tgid,
        ..WriterTrace::default()
    };
    match outcome.captured() {
        Some(c) => {
            for w in c.writes.iter().filter(|w| w.tgid == tgid && w.ret > 0) {
                t.start_s
                    .push(w.start_ns.saturating_sub(cell_start) as f64 / 1e9);
                t.latency_ms.push(w.dur_ns as f64 / 1e6);
                t.bytes += w.ret as u64;
            }
        }
        None => {
            t.error = Some(format!(
                "a user's writer is timed by the kernel's trace, which is not available: {}",
                outcome.note()
            ))
        }
    }
    t
}

/// The kernel's records a cell keeps: the first writer's calls and blocked
/// stretches (the others' would only weigh the raw data), everyone's throttling
/// decisions, the bandwidth estimates and the flusher's passes.
pub fn keep_first_writers_calls(mut outcome: TraceOutcome, tgid: u32) -> TraceOutcome {
    if let TraceOutcome::Traced(c) = &mut outcome {
        c.writes.retain(|w| w.tgid == tgid);
        // its writes to the file under test: the descriptor most calls went to (a
        // report on stdout or stderr at the end is one call or a few)
        let mut per_fd: std::collections::BTreeMap<i32, usize> = Default::default();
        for w in &c.writes {
            *per_fd.entry(w.fd).or_default() += 1;
        }
        if let Some((&main, _)) = per_fd.iter().max_by_key(|(_, n)| **n) {
            c.writes.retain(|w| w.fd == main);
        }
        c.offcpu.retain(|o| o.tgid == tgid);
        c.dirtiers.clear();
    }
    outcome
}

/// The writers of a scenario; the first is the one the claims are about.
pub fn writers_for(s: Scenario, plan: &Plan) -> Vec<WriterPlan> {
    let paced = |fifo: u32, nice: i32, bytes: u64, period_ms: f64, count: u64| WriterKind::Paced {
        bytes,
        period_ms,
        count,
        fifo,
        nice,
    };
    let high = match &plan.high_cmd {
        Some(cmd) => WriterKind::User(cmd.clone()),
        None => paced(55, 0, CHUNK, PERIOD_MS, plan.writes),
    };
    // competitors outlast the high writer; they are stopped when it ends
    let span_s = plan.writes as f64 * PERIOD_MS / 1000.0 + plan.head_start_s + 30.0;
    let competitor = |name: &str, own: WriterKind| {
        let kind = match &plan.competitor_cmd {
            Some(cmd) => WriterKind::User(cmd.clone()),
            None => own,
        };
        WriterPlan::new(name, kind)
    };
    let rt45 = paced(45, 0, 2 * CHUNK, PERIOD_MS / 2.0, (span_s * 100.0) as u64);
    match s {
        Scenario::Alone => vec![WriterPlan::new("rt55", high)],
        Scenario::RtLow => vec![
            WriterPlan::new("rt55", high),
            competitor("rt45-a", rt45.clone()),
            competitor("rt45-b", rt45),
        ],
        Scenario::Bulk => vec![
            WriterPlan::new("rt55", high),
            competitor("bulk-a", WriterKind::Dd),
            competitor("bulk-b", WriterKind::Dd),
        ],
        Scenario::Fig7 => vec![WriterPlan::new(
            "nice4",
            paced(0, 4, CHUNK, PERIOD_MS, plan.writes * 10 / 7),
        )],
    }
}

/// Whether every byte the writer wrote is in its file: the paced writer's block
/// i is all (i % 251) (a last block cut short by the stop may be partial), dd's
/// zeros. A user's command is not checked.
pub fn check_content(p: &WriterPlan, l: &Launched) -> Content {
    let block = match &p.kind {
        WriterKind::Paced { bytes, .. } => Some(*bytes as usize),
        WriterKind::Dd => None,
        WriterKind::User(_) => return Content::NotChecked,
    };
    let Ok(mut f) = std::fs::File::open(&l.file) else {
        return Content::Wrong(format!("{} is missing", l.file.display()));
    };
    let mut buf = vec![0u8; block.unwrap_or(1 << 20)];
    let mut i = 0usize;
    loop {
        let mut got = 0;
        while got < buf.len() {
            match f.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Content::Wrong(format!("{}: {e}", l.file.display())),
            }
        }
        if got == 0 {
            return Content::Intact;
        }
        let want = block.map_or(0, |_| (i % 251) as u8);
        if let Some(at) = buf[..got].iter().position(|&b| b != want) {
            return Content::Wrong(format!(
                "{} byte {} is {}, not {want}",
                l.file.display(),
                i * buf.len() + at,
                buf[at]
            ));
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_of_the_paced_pattern_checks_out_and_a_flipped_byte_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d");
        let block = 4096usize;
        let mut data: Vec<u8> = (0..300)
            .flat_map(|i| vec![(i % 251) as u8; block])
            .collect();
        // cut short in the middle of the last block, as a stopped writer may leave it
        data.truncate(data.len() - 100);
        std::fs::write(&file, &data).unwrap();
        let plan = WriterPlan {
            name: "w".into(),
            kind: WriterKind::Paced {
                bytes: block as u64,
                period_ms: 20.0,
                count: 300,
                fifo: 0,
                nice: 0,
            },
            file: file.clone(),
            latency_file: dir.path().join("l"),
            err_file: dir.path().join("e"),
        };
        let child = Command::new("true").spawn().unwrap();
        let l = Launched {
            child,
            program_pid: 1,
            file: file.clone(),
            latency_file: dir.path().join("l"),
            err_file: dir.path().join("e"),
            status: None,
            started_ns: 0,
        };
        assert_eq!(check_content(&plan, &l), Content::Intact);
        data[5 * block + 7] ^= 1;
        std::fs::write(&file, &data).unwrap();
        assert!(matches!(check_content(&plan, &l), Content::Wrong(w) if w.contains("byte 20487")));
    }

    #[test]
    fn the_paced_writer_oslab_carries_runs_from_scratch_and_writes_its_pattern() {
        if PACED_WRITER.is_none() {
            eprintln!("skipped: this build has no C compiler, so no paced writer");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let exe = install_paced(dir.path()).unwrap();
        let mode = std::fs::metadata(&exe).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700, "only its owner runs it");
        assert!(
            install_paced(dir.path()).is_err(),
            "a file already there is never overwritten"
        );
        let (file, lat) = (dir.path().join("d"), dir.path().join("l"));
        let status = Command::new(&exe)
            .arg(&file)
            .args(["4096", "0", "3", "0"])
            .arg(&lat)
            .status()
            .unwrap();
        assert!(status.success());
        let plan = WriterPlan {
            name: "w".into(),
            kind: WriterKind::Paced {
                bytes: 4096,
                period_ms: 0.0,
                count: 3,
                fifo: 0,
                nice: 0,
            },
            file: file.clone(),
            latency_file: lat.clone(),
            err_file: dir.path().join("e"),
        };
        let l = Launched {
            child: Command::new("true").spawn().unwrap(),
            program_pid: 1,
            file,
            latency_file: lat,
            err_file: dir.path().join("e"),
            status: None,
            started_ns: 0,
        };
        assert_eq!(check_content(&plan, &l), Content::Intact);
        assert_eq!(l.read_latencies(0).latency_ms.len(), 3);
    }

    #[test]
    fn latencies_are_read_as_the_writer_prints_them() {
        let dir = tempfile::tempdir().unwrap();
        let lat = dir.path().join("l");
        std::fs::write(&lat, "1500000000 200000\n1520000000 3500000\nbad\n").unwrap();
        let l = Launched {
            child: Command::new("true").spawn().unwrap(),
            program_pid: 9,
            file: dir.path().join("absent"),
            latency_file: lat,
            err_file: dir.path().join("e"),
            status: None,
            started_ns: 0,
        };
        let t = l.read_latencies(1_000_000_000);
        assert_eq!(t.start_s, vec![0.5, 0.52]);
        assert_eq!(t.latency_ms, vec![0.2, 3.5]);
        assert_eq!(t.tgid, 9);
        assert!(t.error.is_none());
    }

    /// A writer that fails before its first write is named with its exit status
    /// and the end of what it said, not judged as a writer with no slow writes.
    #[test]
    fn a_writer_that_failed_says_how() {
        let dir = tempfile::tempdir().unwrap();
        let err_file = dir.path().join("e");
        let plan = WriterPlan {
            name: "w".into(),
            kind: WriterKind::Dd,
            file: dir.path().join("d"),
            latency_file: dir.path().join("l"),
            err_file: err_file.clone(),
        };
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo cannot join the governor >&2; exit 3"])
            .stderr(std::fs::File::create(&err_file).unwrap());
        let mut l = Launched {
            child: cmd.spawn().unwrap(),
            program_pid: 1,
            file: plan.file.clone(),
            latency_file: plan.latency_file.clone(),
            err_file,
            status: None,
            started_ns: 0,
        };
        l.wait();
        let e = l.read_latencies(0).error.unwrap();
        assert!(
            e.contains("no record") && e.contains("exit status: 3: cannot join the governor"),
            "{e}"
        );
    }
}
