//! Loading, attaching and draining the programs (only built with them). Each
//! tracer is a thread that owns its skeleton: libbpf's objects borrow storage
//! that must outlive them, which a thread's stack gives without leaking.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, RingBufferBuilder};

use crate::attach::Loaded;
use crate::hooks::{Plan, left_out, loaded_as, plans, present_functions, run_queue_from_counters};
use crate::records::{Dirtier, Event, SwitchCounts};
use crate::{Cmd, SchedOptions, Snapshot, TraceError, Tracer, Watch, WritebackOptions};

/// The skeletons libbpf-cargo generates from the programs: generated code, so
/// the workspace's lints do not apply to it.
#[allow(
    clippy::all,
    clippy::too_many_lines,
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    dead_code
)]
mod generated {
    pub mod writeback_skel {
        include!(concat!(env!("OUT_DIR"), "/writeback.skel.rs"));
    }
    pub mod sched_skel {
        include!(concat!(env!("OUT_DIR"), "/sched.skel.rs"));
    }
}
use generated::{sched_skel, writeback_skel};
use sched_skel::SchedSkelBuilder;
use writeback_skel::WritebackSkelBuilder;

/// libbpf's last messages, to explain a failed load.
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture_libbpf_log() {
    fn keep(_level: libbpf_rs::PrintLevel, msg: String) {
        if let Ok(mut log) = LIBBPF_LOG.lock() {
            if log.len() >= 40 {
                log.remove(0);
            }
            log.push(msg.trim_end().to_string());
        }
    }
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Info, keep)));
}

fn failure(what: &str, e: impl std::fmt::Display) -> String {
    let log = LIBBPF_LOG
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    let last: Vec<&String> = log
        .iter()
        .filter(|l| !l.is_empty())
        .rev()
        .take(
            std::env::var("OSLAB_LIBBPF_LINES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(3),
        )
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if last.is_empty() {
        format!("{what}: {e}")
    } else {
        let joined: Vec<&str> = last.iter().map(|s| s.as_str()).collect();
        format!("{what}: {e} (libbpf: {})", joined.join(" / "))
    }
}

/// Runs `body` on its own thread; returns once it reported its programs loaded.
fn spawn<F>(name: &str, body: F) -> Result<Tracer, TraceError>
where
    F: FnOnce(Receiver<Cmd>, Sender<Event>, Sender<Result<Loaded, String>>) + Send + 'static,
{
    capture_libbpf_log();
    let (cmd_tx, cmd_rx) = channel();
    let (ev_tx, ev_rx) = channel();
    let (ready_tx, ready_rx) = channel();
    let thread = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || body(cmd_rx, ev_tx, ready_tx))
        .map_err(|e| TraceError::Failed(format!("starting the tracer thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(loaded)) => Ok(Tracer::from_parts(cmd_tx, ev_rx, thread, loaded)),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(TraceError::Failed(e))
        }
        Err(_) => {
            let _ = thread.join();
            Err(TraceError::Failed(
                "the tracer thread ended while loading".into(),
            ))
        }
    }
}

fn add_watched(map: &dyn MapCore, tgid: u32) -> Result<(), String> {
    map.update(&tgid.to_ne_bytes(), &[1u8], MapFlags::ANY)
        .map_err(|e| format!("watching process {tgid}: {e}"))
}

/// Drains the loaded programs' ring buffer into `events` and answers commands
/// until told to stop. `counters` reads the kernel-side maps, given how many
/// records could not be read.
fn drive(
    ready: Sender<Result<Loaded, String>>,
    loaded: Loaded,
    cmds: Receiver<Cmd>,
    events: Sender<Event>,
    ring_map: &dyn MapCore,
    watched: &dyn MapCore,
    counters: impl Fn(u64) -> Snapshot,
) {
    let undecoded = Rc::new(Cell::new(0u64));
    let seen = undecoded.clone();
    let mut builder = RingBufferBuilder::new();
    let added = builder
        .add(ring_map, move |data: &[u8]| {
            match crate::decode::decode(data) {
                Some(ev) => {
                    let _ = events.send(ev);
                }
                None => seen.set(seen.get() + 1),
            }
            0
        })
        .map(|_| ())
        .map_err(|e| failure("setting up the ring buffer", e));
    let rb = added.and_then(|()| {
        builder
            .build()
            .map_err(|e| failure("setting up the ring buffer", e))
    });
    let rb = match rb {
        Ok(rb) => rb,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(loaded));
    loop {
        // The programs never wake the reader (BPF_RB_NO_WAKEUP): drain on a timer,
        // and at once when asked.
        let cmd = cmds.recv_timeout(DRAIN_EVERY);
        let _ = rb.consume();
        match cmd {
            Ok(Cmd::Watch(tgid, reply)) => {
                let _ = reply.send(add_watched(watched, tgid));
            }
            Ok(Cmd::Snapshot(reply)) => {
                let _ = reply.send(counters(undecoded.get()));
            }
            Ok(Cmd::Stop(reply)) => {
                let _ = reply.send(counters(undecoded.get()));
                return;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// How often the ring buffer is drained: 8 MiB hold about 170,000 switch records,
/// 3.5 s of the busiest ping-pong seen here.
const DRAIN_EVERY: Duration = Duration::from_millis(50);

/// How many arguments each of the running kernel's tracepoints `names` passes
/// (after the tracepoint's own data pointer); None where it has no such
/// tracepoint. The kernel's BTF is read once for all of them.
fn tracepoint_args<const N: usize>(names: [&str; N]) -> [Option<usize>; N] {
    use libbpf_rs::btf::types::FuncProto;
    use libbpf_rs::btf::{Btf, BtfType};
    let Ok(btf) = Btf::from_vmlinux() else {
        return [None; N];
    };
    names.map(|name| {
        let t: BtfType = btf.type_by_name(&format!("btf_trace_{name}"))?;
        let ptr = t.skip_mods_and_typedefs();
        let proto = ptr.next_type()?.skip_mods_and_typedefs();
        let proto = FuncProto::try_from(proto).ok()?;
        Some(proto.len().saturating_sub(1))
    })
}

fn dirtiers(map: &dyn MapCore) -> Vec<Dirtier> {
    let mut out = Vec::new();
    for key in map.keys() {
        let Ok(Some(v)) = map.lookup(&key, MapFlags::ANY) else {
            continue;
        };
        if key.len() < 4 || v.len() < 64 {
            continue;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(v[o..o + 8].try_into().unwrap_or_default());
        let u32_at = |o: usize| u32::from_ne_bytes(v[o..o + 4].try_into().unwrap_or_default());
        let comm_end = v[48..64].iter().position(|&b| b == 0).unwrap_or(16);
        out.push(Dirtier {
            tgid: u32::from_ne_bytes(key[..4].try_into().unwrap_or_default()),
            pages: u64_at(0),
            first_ns: u64_at(8),
            last_ns: u64_at(16),
            cgroup_id: u64_at(24),
            policy: u32_at(32),
            prio: u32_at(36) as i32,
            rt_priority: u32_at(40),
            comm: String::from_utf8_lossy(&v[48..48 + comm_end]).into_owned(),
            memcg_id: if v.len() >= 72 { u64_at(64) } else { 0 },
            flushes: if v.len() >= 80 { u64_at(72) } else { 0 },
        });
    }
    out.sort_by(|a, b| b.pages.cmp(&a.pages).then(a.tgid.cmp(&b.tgid)));
    out
}

/// How to load: the plan, the functions present, the run-queue source.
struct Setup<'a> {
    plan: Plan,
    present: &'a [&'a str],
    counters: bool,
}

fn load_writeback<'o>(
    storage: &'o mut MaybeUninit<libbpf_rs::OpenObject>,
    opts: &WritebackOptions,
    setup: &Setup<'_>,
) -> Result<writeback_skel::WritebackSkel<'o>, String> {
    let faults = setup.plan.faults;
    let mut open = WritebackSkelBuilder::default()
        .open(storage)
        .map_err(|e| failure("opening the write-back programs", e))?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or("the write-back programs have no settings")?;
    rodata.watch_all = opts.watch == Watch::All;
    rodata.all_writes = opts.all_writes;
    rodata.write_threshold_ns = opts.write_threshold.as_nanos() as u64;
    rodata.stack_threshold_ns = opts.stack_threshold.as_nanos() as u64;
    rodata.per_file = opts.per_file;
    rodata.file_calls = opts.file_calls;
    rodata.runq_from_counters = setup.counters;
    if !faults {
        open.progs.on_fault.set_autoload(false);
    }
    if setup.counters {
        open.progs.on_wakeup.set_autoload(false);
    }
    let out = left_out(setup.plan, setup.present);
    for mut prog in open.open_object_mut().progs_mut() {
        if out.iter().any(|n| prog.name() == *n) {
            prog.set_autoload(false);
        }
    }
    // balance_dirty_pages takes 8 arguments on 6.x, 12 before; mm_filemap_fault
    // came with 6.10
    let [bdp_args, filemap_fault_args] =
        tracepoint_args(["balance_dirty_pages", "mm_filemap_fault"]);
    if !faults || filemap_fault_args != Some(2) {
        // before 6.10 a read through a mapping is not named as a file's
        open.progs.on_filemap_fault.set_autoload(false);
    }
    if !opts.file_calls {
        // the device queue is only read for reads
        open.progs.on_rq_issue.set_autoload(false);
        open.progs.on_rq_complete.set_autoload(false);
        open.progs.on_rq_requeue.set_autoload(false);
    }
    if opts.dirtiers_only {
        for mut prog in open.open_object_mut().progs_mut() {
            if prog.name() != "on_dirty_folio" && prog.name() != "on_bio_queue" {
                prog.set_autoload(false);
            }
        }
        return load_and_attach(open, opts);
    }
    // durable writes are counted for the governor's monitor alone
    open.progs.on_bio_queue.set_autoload(false);
    match bdp_args {
        Some(8) => open.progs.on_pause_args.set_autoload(false),
        Some(12) => open.progs.on_pause.set_autoload(false),
        _ => {
            open.progs.on_pause.set_autoload(false);
            open.progs.on_pause_args.set_autoload(false);
        }
    }
    load_and_attach(open, opts)
}

fn load_and_attach<'o>(
    open: writeback_skel::OpenWritebackSkel<'o>,
    opts: &WritebackOptions,
) -> Result<writeback_skel::WritebackSkel<'o>, String> {
    let mut skel = open
        .load()
        .map_err(|e| failure("loading the write-back programs", e))?;
    if let Watch::Pids(pids) = &opts.watch {
        for &p in pids {
            add_watched(&skel.maps.watched, p)?;
        }
    }
    skel.attach()
        .map_err(|e| failure("attaching the write-back programs", e))?;
    Ok(skel)
}

/// Loads the first plan that loads; what was attached, and the limits met.
fn first_loading<'o>(
    storages: &'o mut [MaybeUninit<libbpf_rs::OpenObject>],
    opts: &WritebackOptions,
    plans: &[Plan],
) -> Result<(writeback_skel::WritebackSkel<'o>, Loaded), String> {
    let present = present_functions();
    let counters = run_queue_from_counters(opts.run_queue);
    let mut failed: Vec<(Plan, String)> = Vec::new();
    for (storage, &plan) in storages.iter_mut().zip(plans) {
        let result = if plan.functions && present.is_empty() {
            Err(
                "this kernel has none of the functions (ext4, XFS, btrfs, block devices)"
                    .to_string(),
            )
        } else {
            load_writeback(
                storage,
                opts,
                &Setup {
                    plan,
                    present: &present,
                    counters,
                },
            )
        };
        match result {
            Ok(skel) => {
                let loaded = loaded_as(plan, &present, counters, opts, &failed);
                return Ok((skel, loaded));
            }
            Err(e) => failed.push((plan, e)),
        }
    }
    Err(failed
        .pop()
        .map_or_else(|| "nothing to load".to_string(), |(_, e)| e))
}

pub(crate) fn start_writeback(opts: WritebackOptions) -> Result<Tracer, TraceError> {
    spawn("oslab-trace-wb", move |cmds, events, ready| {
        let plans = if opts.dirtiers_only {
            plans(crate::CallHooks::Syscalls, false)
        } else {
            plans(opts.hooks, opts.file_calls)
        };
        let mut storages: Vec<MaybeUninit<libbpf_rs::OpenObject>> =
            plans.iter().map(|_| MaybeUninit::uninit()).collect();
        match first_loading(&mut storages, &opts, &plans) {
            Err(e) => {
                let _ = ready.send(Err(e));
            }
            Ok((skel, loaded)) => drive(
                ready,
                loaded,
                cmds,
                events,
                &skel.maps.events,
                &skel.maps.watched,
                |undecoded| Snapshot {
                    dirtiers: dirtiers(&skel.maps.dirtiers),
                    counts: Vec::new(),
                    lost: skel.maps.bss_data.as_deref().map_or(0, |b| b.lost_events),
                    undecoded,
                    // the governor's monitor asks often and needs none
                    programs: if opts.dirtiers_only {
                        Vec::new()
                    } else {
                        crate::hooks::program_runs(skel.object())
                    },
                },
            ),
        }
    })
}

fn switch_counts(map: &dyn MapCore) -> Vec<SwitchCounts> {
    let mut out = Vec::new();
    for key in map.keys() {
        let Ok(Some(v)) = map.lookup(&key, MapFlags::ANY) else {
            continue;
        };
        if key.len() < 4 || v.len() < 24 {
            continue;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(v[o..o + 8].try_into().unwrap_or_default());
        out.push(SwitchCounts {
            pid: u32::from_ne_bytes(key[..4].try_into().unwrap_or_default()),
            voluntary: u64_at(0),
            involuntary: u64_at(8),
            run_ns: u64_at(16),
        });
    }
    out.sort_by_key(|c| c.pid);
    out
}

fn load_sched<'o>(
    storage: &'o mut MaybeUninit<libbpf_rs::OpenObject>,
    opts: &SchedOptions,
) -> Result<sched_skel::SchedSkel<'o>, String> {
    let mut open = SchedSkelBuilder::default()
        .open(storage)
        .map_err(|e| failure("opening the scheduler programs", e))?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or("the scheduler programs have no settings")?;
    rodata.with_events = opts.with_events;
    let mut skel = open
        .load()
        .map_err(|e| failure("loading the scheduler programs", e))?;
    for &p in &opts.pids {
        add_watched(&skel.maps.watched, p)?;
    }
    skel.attach()
        .map_err(|e| failure("attaching the scheduler programs", e))?;
    Ok(skel)
}

pub(crate) fn start_sched(opts: SchedOptions) -> Result<Tracer, TraceError> {
    spawn("oslab-trace-sched", move |cmds, events, ready| {
        let mut storage = MaybeUninit::uninit();
        match load_sched(&mut storage, &opts) {
            Err(e) => {
                let _ = ready.send(Err(e));
            }
            Ok(skel) => drive(
                ready,
                Loaded::default(),
                cmds,
                events,
                &skel.maps.events,
                &skel.maps.watched,
                |undecoded| Snapshot {
                    dirtiers: Vec::new(),
                    counts: switch_counts(&skel.maps.switches),
                    lost: skel.maps.bss_data.as_deref().map_or(0, |b| b.lost_events),
                    undecoded,
                    programs: Vec::new(),
                },
            ),
        }
    })
}
