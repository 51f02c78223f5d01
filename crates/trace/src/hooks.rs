//! Which of the write-back programs see calls begin and end, chosen at load
//! time: the file system functions (fentry/fexit, call_functions.h) where the
//! kernel has them and allows programs on them, else the system call
//! tracepoints; and whether the run-queue part of a sleep comes from the
//! task's own count (run_delay) or from a program on every wake-up.

use std::collections::HashSet;

use libbpf_rs::btf::Btf;
use libbpf_rs::btf::types::Struct;

use std::os::fd::AsFd;

use libbpf_rs::query::ProgInfoIter;

use crate::attach::{Attached, CallHooks, CallSet, Loaded, RunQueue};
use crate::{ProgramRuns, WritebackOptions};

/// Each kernel function with programs on it: (function, entry program, exit
/// program). The file systems' own read, write and fsync functions, as bcc's
/// ext4slower hooks them (called through the file's operations, so never
/// inlined), and sync_file_range, which reaches none of them.
pub(crate) const FUNCTIONS: [(&str, &str, &str); 13] = [
    ("ext4_file_read_iter", "in_ext4_read", "out_ext4_read"),
    ("ext4_file_write_iter", "in_ext4_write", "out_ext4_write"),
    ("xfs_file_read_iter", "in_xfs_read", "out_xfs_read"),
    ("xfs_file_write_iter", "in_xfs_write", "out_xfs_write"),
    ("btrfs_file_read_iter", "in_btrfs_read", "out_btrfs_read"),
    ("btrfs_file_write_iter", "in_btrfs_write", "out_btrfs_write"),
    ("blkdev_read_iter", "in_blk_read", "out_blk_read"),
    ("blkdev_write_iter", "in_blk_write", "out_blk_write"),
    ("ext4_sync_file", "in_ext4_sync", "out_ext4_sync"),
    ("xfs_file_fsync", "in_xfs_sync", "out_xfs_sync"),
    ("btrfs_sync_file", "in_btrfs_sync", "out_btrfs_sync"),
    ("blkdev_fsync", "in_blk_sync", "out_blk_sync"),
    ("sync_file_range", "in_range_sync", "out_range_sync"),
];

/// The system call set's programs.
pub(crate) const SYSCALL_PROGRAMS: [&str; 2] = ["on_sys_enter", "on_sys_exit"];

/// One way to load the programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The function set (else the system call set).
    pub functions: bool,
    /// With the page fault program.
    pub faults: bool,
}

/// The ways to try, in order: the function set before the system call set
/// where both may do, each with page faults before without them.
pub(crate) fn plans(hooks: CallHooks, file_calls: bool) -> Vec<Plan> {
    let sets: &[bool] = match hooks {
        CallHooks::Auto => &[true, false],
        CallHooks::Functions => &[true],
        CallHooks::Syscalls => &[false],
    };
    let faults: &[bool] = if file_calls { &[true, false] } else { &[false] };
    sets.iter()
        .flat_map(|&functions| faults.iter().map(move |&faults| Plan { functions, faults }))
        .collect()
}

/// The named functions this kernel has now, built in or in a loaded module
/// (a module loaded later is not traced), by /proc/kallsyms. A function the
/// compiler renamed (`.isra`, `.constprop`) has no BTF entry to attach to and
/// is not listed under its own name.
pub(crate) fn present_functions() -> Vec<&'static str> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let wanted: HashSet<&str> = FUNCTIONS.iter().map(|f| f.0).collect();
    let mut found = HashSet::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(_), Some(kind), Some(name)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if (kind == "t" || kind == "T") && wanted.contains(name) {
            found.insert(name.to_string());
        }
    }
    FUNCTIONS
        .iter()
        .map(|f| f.0)
        .filter(|f| found.contains(*f))
        .collect()
}

/// The programs not to load under `plan`, given the functions present.
pub(crate) fn left_out(plan: Plan, present: &[&str]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (function, entry, exit) in FUNCTIONS {
        if !plan.functions || !present.contains(&function) {
            out.extend([entry, exit]);
        }
    }
    if plan.functions {
        out.extend(SYSCALL_PROGRAMS);
    }
    out
}

/// Whether the run-queue part of a sleep comes from the task's run_delay:
/// asked for, or on Auto where the kernel keeps it (task_struct has
/// sched_info: CONFIG_SCHED_INFO).
pub(crate) fn run_queue_from_counters(choice: RunQueue) -> bool {
    match choice {
        RunQueue::Counters => true,
        RunQueue::Wakeups => false,
        RunQueue::Auto => kernel_keeps_run_delay(),
    }
}

fn kernel_keeps_run_delay() -> bool {
    let Ok(btf) = Btf::from_vmlinux() else {
        return false;
    };
    btf.type_by_name::<Struct>("task_struct")
        .is_some_and(|t| t.iter().any(|m| m.name.is_some_and(|n| n == "sched_info")))
}

/// What a tracer loaded under `plan` reports, given the plans that failed before.
pub(crate) fn loaded_as(
    plan: Plan,
    present: &[&str],
    counters: bool,
    opts: &WritebackOptions,
    failed: &[(Plan, String)],
) -> Loaded {
    let mut limits = Vec::new();
    if opts.file_calls && !plan.faults {
        // page_fault_user is x86's: elsewhere everything but page faults is
        // still traced
        let why = failed
            .iter()
            .find(|(p, _)| p.faults && p.functions == plan.functions)
            .map_or("no fault tracepoint", |(_, e)| e.as_str());
        limits.push(format!(
            "page faults are not traced on this kernel ({why}): stores through a mapping show only as dirtied pages"
        ));
    }
    let calls = if plan.functions {
        CallSet::Functions(present.iter().map(|f| f.to_string()).collect())
    } else {
        CallSet::Syscalls(
            failed
                .iter()
                .find(|(p, _)| p.functions)
                .map(|(_, e)| e.clone()),
        )
    };
    Loaded {
        limits,
        attached: (!opts.dirtiers_only).then_some(Attached {
            calls,
            run_queue_from_counters: counters,
        }),
    }
}

/// Each loaded program of `object`, with the kernel's count of its runs.
pub(crate) fn program_runs(object: &libbpf_rs::Object) -> Vec<ProgramRuns> {
    let ids: Vec<(u32, String)> = object
        .progs()
        .filter(|p| p.autoload())
        .filter_map(|p| {
            let id = libbpf_rs::Program::id_from_fd(p.as_fd()).ok()?;
            Some((id, p.name().to_string_lossy().into_owned()))
        })
        .collect();
    let mut out: Vec<ProgramRuns> = ProgInfoIter::default()
        .filter_map(|info| {
            let (_, name) = ids.iter().find(|(id, _)| *id == info.id)?;
            Some(ProgramRuns {
                name: name.clone(),
                runs: info.run_cnt,
                run_ns: info.run_time_ns,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_tries_the_functions_first_and_faults_before_none() {
        let p = plans(CallHooks::Auto, true);
        let got: Vec<(bool, bool)> = p.iter().map(|p| (p.functions, p.faults)).collect();
        assert_eq!(
            got,
            [(true, true), (true, false), (false, true), (false, false)]
        );
        assert!(
            plans(CallHooks::Syscalls, false)
                .iter()
                .all(|p| !p.functions && !p.faults)
        );
    }

    #[test]
    fn the_function_set_leaves_out_the_system_call_programs_and_absent_functions() {
        let plan = Plan {
            functions: true,
            faults: true,
        };
        let out = left_out(plan, &["ext4_file_read_iter", "ext4_sync_file"]);
        assert!(out.contains(&"on_sys_enter") && out.contains(&"on_sys_exit"));
        assert!(out.contains(&"in_xfs_read") && out.contains(&"out_xfs_read"));
        assert!(!out.contains(&"in_ext4_read") && !out.contains(&"out_ext4_sync"));
        let sys = left_out(
            Plan {
                functions: false,
                faults: true,
            },
            &["ext4_file_read_iter"],
        );
        assert_eq!(sys.len(), 2 * FUNCTIONS.len(), "every function program");
    }
}
