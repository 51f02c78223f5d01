//! Ping-pong on one CPU: the peer can only run when the measuring side is switched
//! out, so each side switches at least once per round trip, whatever the timing.

use oslab_sys::pingpong::{self, Mechanism, Tasks};

#[test]
fn every_round_trip_switches_both_sides_on_one_cpu() {
    let cpu = oslab_sys::process::affinity().unwrap()[0];
    for tasks in [Tasks::Threads, Tasks::Processes] {
        for mech in [Mechanism::Futex, Mechanism::Pipe] {
            let r = pingpong::run(tasks, mech, Some(cpu), Some(cpu), 200, 3, 10, 4096).unwrap();
            assert_eq!(r.batch_ns.len(), 3);
            assert!(r.batch_ns.iter().all(|&b| b > 0));
            let n = 200 * 3;
            assert!(
                r.own_voluntary + r.own_involuntary >= n,
                "{tasks:?} {mech:?}: {r:?}"
            );
            assert!(
                r.peer_voluntary + r.peer_involuntary >= n + 10,
                "{tasks:?} {mech:?}: {r:?}"
            );
            assert_eq!(r.own_cpus, 1 << cpu, "the measuring side stayed on its CPU");
        }
    }
}

#[test]
fn write_only_timing_has_one_figure_per_sample() {
    let v = pingpong::time_writes(64 << 10, 4, 3).unwrap();
    assert_eq!(v.len(), 3);
    assert!(v.iter().all(|x| *x > 0.0));
    assert_eq!(pingpong::time_writes(0, 4, 2).unwrap(), vec![0.0, 0.0]);
}
