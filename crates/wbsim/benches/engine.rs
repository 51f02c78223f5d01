//! Simulator speed: events per second and the paper's Fig. 2 scenario.
//! Run with `cargo bench -p oslab-wbsim`.

use std::time::Instant;

use oslab_wbsim::{Policy, scenario, simulate};

fn main() {
    let mut cfg = scenario::find("paper-fig2").expect("built in").config;
    for policy in [Policy::Vanilla, Policy::Wcall, Policy::WcallFair] {
        cfg.policy = policy;
        let mut times = Vec::new();
        let mut events = 0;
        for _ in 0..20 {
            let t = Instant::now();
            let out = simulate(&cfg);
            times.push(t.elapsed().as_secs_f64());
            // the steady-state start's warm-up is part of the run's cost
            events = out.events + out.start.warm_up_events;
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "paper-fig2 {:<10} median {:.2} ms per run, {} events, {:.1} M events/s",
            policy.name(),
            median * 1e3,
            events,
            events as f64 / median / 1e6
        );
    }
    let cfg = scenario::find("material-a").expect("built in").config;
    let t = Instant::now();
    let out = simulate(&cfg);
    let s = t.elapsed().as_secs_f64();
    println!(
        "material-a (240 s simulated): {:.2} ms, {} events, {:.1} M events/s",
        s * 1e3,
        out.events + out.start.warm_up_events,
        (out.events + out.start.warm_up_events) as f64 / s / 1e6
    );
}
