//! The scheduler programs count switches the way getrusage() does: for a ping-pong
//! pinned to one CPU (processes and threads, futex and pipe), the voluntary and
//! involuntary switches the kernel's sched_switch records show for each side
//! inside its measured window equal that side's getrusage() counts. Root only.

use oslab_probe::pingpong::{self, Mechanism, Tasks};
use oslab_trace::analysis::switches_between;
use oslab_trace::{SchedOptions, Tracer};

#[test]
fn sched_switch_counts_equal_rusage_for_a_pinned_ping_pong() {
    if let Err(why) = oslab_trace::available() {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    let cpu = oslab_sys::process::affinity()
        .ok()
        .and_then(|c| c.first().copied())
        .unwrap_or(0);
    for tasks in [Tasks::Processes, Tasks::Threads] {
        for mech in [Mechanism::Futex, Mechanism::Pipe] {
            let tracer = Tracer::sched(&SchedOptions {
                pids: vec![std::process::id()],
                with_events: true,
            })
            .expect("the scheduler programs load");
            let r = pingpong::run(tasks, mech, Some(cpu), Some(cpu), 2000, 2, 200, 0).unwrap();
            let c = tracer.finish(0);
            assert_eq!(c.lost, 0, "no record lost");
            let own =
                switches_between(&c.switches, r.own_tid, r.own_window_ns.0, r.own_window_ns.1);
            let peer = switches_between(
                &c.switches,
                r.peer_tid,
                r.peer_window_ns.0,
                r.peer_window_ns.1,
            );
            let what = format!("{tasks:?} {mech:?}");
            assert_eq!(
                own,
                (r.own_voluntary, r.own_involuntary),
                "{what}: the measuring side"
            );
            assert_eq!(
                peer,
                (r.peer_voluntary, r.peer_involuntary),
                "{what}: the peer"
            );
            assert!(
                r.own_voluntary + r.own_involuntary >= 4000 * 9 / 10,
                "{what}: it switched"
            );
        }
    }
}
