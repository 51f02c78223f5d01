//! `oslab stalls`'s session: the write-back tracer read once an interval, each
//! interval's records summarised with their processes named (from /proc), until a
//! number of intervals has passed or the watched command has ended.

use std::collections::HashMap;
use std::time::Duration;

use oslab_sys::cgroup_names::CgroupNames;
use oslab_sys::clock::monotonic_ns;
use oslab_sys::fsread::Root;
use oslab_sys::pidinfo;

use crate::analysis::{Captured, hz_from_pauses};
use crate::decode::user_dev;
use crate::records::{Dirtier, WriteCall};
use crate::stalls::{Interval, ProcessInfo, dirtied_since, stall_lines, summarize};
use crate::{TraceError, Tracer, WritebackOptions};
use oslab_model::trace::{IntervalSummary, StallLine};

/// What a session traces and how often it reports.
pub struct StallsOptions {
    pub tracing: WritebackOptions,
    /// Nanoseconds between summaries.
    pub interval_ns: u64,
    /// Stop after this many intervals.
    pub count: Option<u64>,
    /// Rows per table (dirtiers, blocking places).
    pub top: usize,
    /// Name the threads of the slow calls (for a trace file).
    pub name_threads: bool,
    /// Keep oslab's own calls and dirtied pages.
    pub include_self: bool,
}

/// One interval: its summary, its slow calls and the records behind them.
pub struct Tick {
    pub summary: IntervalSummary,
    pub lines: Vec<StallLine>,
    pub captured: Captured,
    /// The kernel's tick rate (0 where unknown).
    pub hz: u32,
    pub page_size: u64,
    /// The name of each thread of `lines`, with `name_threads`.
    pub thread_names: HashMap<u32, String>,
    /// Blocked stretches of this interval and the one before, where the
    /// stretches of `lines` are (a call may end an interval after it blocked).
    pub stacks: Vec<crate::records::OffCpu>,
}

/// Leaves out the records of oslab's own process `own` (None with
/// `--include-self`), and names the records of the command oslab started for the
/// user after the command: until its exec it is a fork of oslab, and the kernel
/// counts what it does against oslab's name.
fn attribute(
    cap: &mut Captured,
    dirtiers: &mut Vec<Dirtier>,
    own: Option<u32>,
    command: Option<&(u32, String)>,
) {
    if let Some(own) = own {
        cap.writes.retain(|w| w.tgid != own);
        cap.offcpu.retain(|o| o.tgid != own);
        dirtiers.retain(|d| d.tgid != own);
    }
    if let Some((pid, name)) = command {
        for d in dirtiers.iter_mut().filter(|d| d.tgid == *pid) {
            d.comm.clone_from(name);
        }
        for w in cap.writes.iter_mut().filter(|w| w.tgid == *pid) {
            w.comm.clone_from(name);
        }
    }
}

/// A running session.
pub struct StallsSession {
    tracer: Tracer,
    options: StallsOptions,
    /// This process: its own writes are left out.
    own: u32,
    root: Root,
    known_hz: Option<u32>,
    page_size: u64,
    names: HashMap<u32, ProcessInfo>,
    cgroups: CgroupNames,
    pages_before: HashMap<u32, u64>,
    /// Per device (user-space encoding), the processes that dirtied files on it
    /// since tracing began.
    dirtied_on: HashMap<u64, std::collections::BTreeSet<u32>>,
    /// The previous interval's blocked stretches.
    recent_offcpu: Vec<crate::records::OffCpu>,
    /// The command oslab runs for the user: its pid and name (see
    /// [`StallsSession::watch_command`]).
    command: Option<(u32, String)>,
}

impl StallsSession {
    /// Loads the tracer.
    pub fn start(options: StallsOptions) -> Result<StallsSession, TraceError> {
        let tracer = Tracer::writeback(&options.tracing)?;
        let root = Root::live();
        let cgroups = CgroupNames::live(&root);
        let release = root
            .read_trim("/proc/sys/kernel/osrelease")
            .unwrap_or_default();
        let known_hz = oslab_sys::machine::kernel_hz(&root, &release)
            .value()
            .map(|h| h.hz);
        Ok(StallsSession {
            tracer,
            options,
            own: std::process::id(),
            known_hz,
            page_size: oslab_sys::machine::page_size(),
            names: HashMap::new(),
            cgroups,
            root,
            pages_before: HashMap::new(),
            dirtied_on: HashMap::new(),
            recent_offcpu: Vec::new(),
            command: None,
        })
    }

    /// The command started for the user is process `pid`, named `name`. Until it
    /// runs the command it is a fork of oslab, under oslab's name, and the kernel
    /// counts against that name what its exec does (the executable's access time
    /// written back): those records are the command's, not oslab's, and are named
    /// so.
    pub fn watch_command(&mut self, pid: u32, name: &str) {
        self.command = Some((pid, name.to_string()));
    }

    /// Hands `each` every interval until the count is reached or `ended` gives
    /// the watched command's exit code (asked every 20 ms); that code, if so.
    pub fn run(
        &mut self,
        mut ended: impl FnMut() -> Option<i32>,
        mut each: impl FnMut(&Tick),
    ) -> Option<i32> {
        let step = self.options.interval_ns;
        let origin = monotonic_ns();
        let mut n = 0u64;
        loop {
            let code = wait_until(origin + (n + 1) * step, &mut ended);
            each(&self.tick(step));
            n += 1;
            if code.is_some() {
                return code;
            }
            if self.options.count.is_some_and(|c| n >= c) {
                return None;
            }
        }
    }

    /// What this kernel could not trace, one sentence each.
    pub fn limits(&self) -> &[String] {
        &self.tracer.limits
    }

    /// Which programs see the calls begin and end.
    pub fn attached(&self) -> Option<&crate::Attached> {
        self.tracer.attached.as_ref()
    }

    /// Stops the tracer; how many kernel records were lost in all.
    pub fn stop(self) -> u64 {
        self.tracer.stop().1.lost
    }

    /// The interval that ends now.
    fn tick(&mut self, step: u64) -> Tick {
        // The snapshot drains the ring buffer first, so the records of a command
        // that has just ended are in this interval, not lost with the next.
        let mut snap = self.tracer.snapshot();
        let mut cap = Captured::default();
        self.tracer.collect(&mut cap);
        let own = (!self.options.include_self).then_some(self.own);
        attribute(&mut cap, &mut snap.dirtiers, own, self.command.as_ref());
        let hz = self
            .known_hz
            .or_else(|| hz_from_pauses(&cap.pauses))
            .unwrap_or(0);
        let seen: Vec<(u32, u64, u64, &str)> = cap
            .writes
            .iter()
            .map(|w| (w.tgid, w.cgroup_id, w.memcg_id, w.comm.as_str()))
            .chain(
                snap.dirtiers
                    .iter()
                    .map(|d| (d.tgid, d.cgroup_id, d.memcg_id, d.comm.as_str())),
            )
            .collect();
        for (tgid, cgroup_id, memcg_id, recorded) in seen {
            self.learn(tgid, cgroup_id, memcg_id, recorded);
        }
        let info =
            |tgid: u32| -> ProcessInfo { self.names.get(&tgid).cloned().unwrap_or_default() };
        let dirtied = dirtied_since(&self.pages_before, &snap.dirtiers);
        let now = monotonic_ns();
        let iv = Interval {
            start_ns: now.saturating_sub(step),
            end_ns: now,
            writes: &cap.writes,
            offcpu: &cap.offcpu,
            pauses: &cap.pauses,
            bandwidth: &cap.bandwidth,
            flushes: &cap.flushes,
            lost: snap.lost,
            hz,
            page_size: self.page_size,
        };
        let summary = summarize(&iv, &dirtied, &info, self.options.top);
        let root = &self.root;
        let file = |w: &WriteCall| file_name(root, w);
        // A call's blocked stretches may have been drained an interval before
        // the call ended (a long fault): match against both intervals'.
        let mut stacks = std::mem::take(&mut self.recent_offcpu);
        stacks.extend(cap.offcpu.iter().cloned());
        let mut lines = stall_lines(&cap.writes, &stacks, &info, &file);
        self.pages_before = snap.dirtiers.iter().map(|d| (d.tgid, d.pages)).collect();
        for f in &cap.files {
            self.dirtied_on.entry(f.dev).or_default().insert(f.tgid);
        }
        for (line, w) in lines.iter_mut().zip(&cap.writes) {
            if w.queued_write_bytes > 0 {
                line.writers_there = self.writers_on(user_dev(w.dev), w.tgid);
            }
        }
        self.recent_offcpu = cap.offcpu.clone();
        let thread_names = if self.options.name_threads {
            self.thread_names(&lines)
        } else {
            HashMap::new()
        };
        Tick {
            summary,
            lines,
            captured: cap,
            hz,
            page_size: self.page_size,
            thread_names,
            stacks,
        }
    }

    /// Who dirtied files on device `dev`, other than `reader`, as "comm (pid)",
    /// the most pages dirtied first.
    fn writers_on(&self, dev: u64, reader: u32) -> Vec<String> {
        let Some(tgids) = self.dirtied_on.get(&dev) else {
            return Vec::new();
        };
        let pages = |t: u32| self.pages_before.get(&t).copied().unwrap_or(0);
        let mut ranked: Vec<u32> = tgids
            .iter()
            .copied()
            .filter(|&t| t != reader && (self.options.include_self || t != self.own))
            .collect();
        ranked.sort_by(|a, b| pages(*b).cmp(&pages(*a)).then(a.cmp(b)));
        ranked
            .into_iter()
            .take(5)
            .map(|t| {
                let comm = self.names.get(&t).map_or("?", |p| p.comm.as_str());
                format!("{comm} ({t})")
            })
            .collect()
    }

    /// Names a process the first time a record mentions it: from /proc while it
    /// runs, else from what the kernel recorded.
    fn learn(&mut self, tgid: u32, cgroup_id: u64, memcg_id: u64, recorded_comm: &str) {
        if self.names.contains_key(&tgid) {
            return;
        }
        let comm = pidinfo::comm(&self.root, tgid).unwrap_or_else(|| recorded_comm.to_string());
        let cgroup = match self.cgroups.name(cgroup_id, memcg_id) {
            Ok(name) => name,
            Err(why) => pidinfo::cgroup(&self.root, tgid).unwrap_or_else(|| format!("- ({why})")),
        };
        self.names.insert(tgid, ProcessInfo { comm, cgroup });
    }

    /// Each slow call's thread by its name now (its process's where it is gone).
    fn thread_names(&self, lines: &[StallLine]) -> HashMap<u32, String> {
        lines
            .iter()
            .map(|l| {
                let name = pidinfo::comm(&self.root, l.pid).unwrap_or_else(|| l.comm.clone());
                (l.pid, name)
            })
            .collect()
    }
}

/// A call's file: its path where the process still has it open (or mapped),
/// else its device and inode, else its descriptor.
fn file_name(root: &Root, w: &WriteCall) -> String {
    if w.ino == 0 {
        return if w.fd >= 0 {
            format!("fd {}", w.fd)
        } else {
            "-".to_string()
        };
    }
    let dev = user_dev(w.dev);
    pidinfo::file_path(root, w.tgid, w.fd, dev, w.ino).unwrap_or_else(|| {
        let place = format!(
            "dev {}:{} inode {}",
            libc::major(dev),
            libc::minor(dev),
            w.ino
        );
        if w.file_name.is_empty() {
            place
        } else {
            format!("{} ({place})", w.file_name)
        }
    })
}

/// Sleeps until `target` (CLOCK_MONOTONIC ns), looking at `ended` every 20 ms;
/// the exit code it gave, if it gave one first.
fn wait_until(target: u64, ended: &mut impl FnMut() -> Option<i32>) -> Option<i32> {
    while monotonic_ns() < target {
        if let Some(code) = ended() {
            return Some(code);
        }
        let left = Duration::from_nanos(target.saturating_sub(monotonic_ns()).max(1));
        std::thread::sleep(Duration::from_millis(20).min(left));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirtier(tgid: u32, comm: &str) -> Dirtier {
        Dirtier {
            tgid,
            comm: comm.into(),
            pages: 1,
            first_ns: 0,
            last_ns: 0,
            cgroup_id: 0,
            policy: 0,
            prio: 120,
            rt_priority: 0,
            memcg_id: 0,
            flushes: 0,
        }
    }

    fn write(tgid: u32, comm: &str) -> WriteCall {
        WriteCall {
            tgid,
            comm: comm.into(),
            ..WriteCall::default()
        }
    }

    /// `stalls -- false` listed oslab as a dirtier: the pages its fork dirtied
    /// before the exec carry oslab's name, and oslab's own writes were kept.
    #[test]
    fn the_commands_fork_is_named_as_the_command_and_oslab_itself_is_left_out() {
        let (own, child) = (100, 101);
        let mut cap = Captured {
            writes: vec![write(own, "oslab"), write(child, "oslab"), write(7, "dd")],
            ..Captured::default()
        };
        let mut dirtiers = vec![dirtier(own, "oslab"), dirtier(child, "oslab")];
        attribute(
            &mut cap,
            &mut dirtiers,
            Some(own),
            Some(&(child, "false".to_string())),
        );
        let names: Vec<(u32, &str)> = dirtiers.iter().map(|d| (d.tgid, d.comm.as_str())).collect();
        assert_eq!(names, [(child, "false")]);
        let writes: Vec<(u32, &str)> = cap
            .writes
            .iter()
            .map(|w| (w.tgid, w.comm.as_str()))
            .collect();
        assert_eq!(writes, [(child, "false"), (7, "dd")]);
    }

    #[test]
    fn with_include_self_oslabs_own_records_stay_under_its_name() {
        let mut cap = Captured {
            writes: vec![write(100, "oslab")],
            ..Captured::default()
        };
        let mut dirtiers = vec![dirtier(100, "oslab")];
        attribute(&mut cap, &mut dirtiers, None, Some(&(101, "false".into())));
        assert_eq!(dirtiers[0].comm, "oslab");
        assert_eq!(cap.writes[0].comm, "oslab");
    }
}
