//! `oslab sim bench`: the simulator's own speed.

use oslab_services::sim_sweep::sweep;
use oslab_wbsim::scenario;
use oslab_wbsim::{Policy, simulate};

use super::inputs::values;
use crate::failure::{CmdResult, Failure};
use crate::output::print;

pub fn run() -> CmdResult {
    let mut text = String::new();
    let c = scenario::find("paper-fig2").expect("built in").config;
    for p in [Policy::Vanilla, Policy::Wcall, Policy::WcallFair] {
        let mut c = c.clone();
        c.policy = p;
        let mut times = Vec::new();
        let mut events = 0;
        let mut warm_up = 0;
        for _ in 0..30 {
            let t = std::time::Instant::now();
            let o = simulate(&c);
            times.push(t.elapsed().as_secs_f64());
            (events, warm_up) = (o.events, o.start.warm_up_events);
        }
        let m = oslab_stats::median(&times).unwrap_or(0.0);
        text.push_str(&format!(
            "paper-fig2 ({}): {:.3} ms per run (median of 30), {events} events + {warm_up} in the steady-state warm-up, {:.1} M events/s on one core\n",
            p.name(),
            m * 1e3,
            (events + warm_up) as f64 / m / 1e6
        ));
    }
    let (k, v) = values("dirty_bytes=16MiB..512MiB", 1000)?;
    let mut sc = scenario::find("testbed-fig2").expect("built in").config;
    sc.duration_s = 15.0;
    let t = std::time::Instant::now();
    let n = sweep(&sc, &k, &v).map_err(Failure::runtime)?.len();
    text.push_str(&format!(
        "sweep of {n} settings (testbed-fig2, 15 s each): {:.2} s on {} threads\n",
        t.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    ));
    print(&text);
    Ok(0)
}
