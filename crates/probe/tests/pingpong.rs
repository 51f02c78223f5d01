//! Ping-pong on one CPU: the peer can only run when the measuring side is switched
//! out, so each side switches at least once per round trip, whatever the timing.

use oslab_probe::pingpong::{self, Mechanism, Tasks};

/// The tests fork peers; one at a time, so the dead-peer test kills its own.
static FORKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn every_round_trip_switches_both_sides_on_one_cpu() {
    let _one = FORKING.lock().unwrap_or_else(|p| p.into_inner());
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

/// Regression: a peer that died left the measuring side in FUTEX_WAIT (or a pipe
/// read) forever. Now the run ends with an error.
#[test]
fn a_dead_peer_ends_the_run_with_an_error() {
    let _one = FORKING.lock().unwrap_or_else(|p| p.into_inner());
    let me = std::process::id();
    for mech in [Mechanism::Futex, Mechanism::Pipe] {
        let run = std::thread::spawn(move || {
            // far more round trips than could finish while the test waits
            pingpong::run(Tasks::Processes, mech, None, None, u64::MAX / 2, 1, 0, 0)
        });
        let t = std::time::Instant::now();
        let peer = loop {
            let children: Vec<u32> =
                oslab_sys::parse::pidstat::read_all(&oslab_sys::fsread::Root::live())
                    .into_iter()
                    .filter(|(_, s)| s.ppid == me && s.state != 'Z')
                    .map(|(pid, _)| pid)
                    .collect();
            if let Some(p) = children.first() {
                break *p;
            }
            assert!(t.elapsed().as_secs() < 20, "no peer appeared");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        oslab_sys::process::signal_process(peer, 9).unwrap();
        let r = run.join().unwrap();
        assert!(r.is_err(), "{mech:?}: the run noticed its peer died");
    }
}
