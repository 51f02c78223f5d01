//! The scenario simulated once under each policy.

use oslab_wbsim::simulate;

use super::{Plan, Raw, SimulatedRun};

pub fn measure(plan: &Plan) -> Raw {
    let runs = plan
        .policies
        .iter()
        .map(|&policy| {
            let mut c = plan.config.clone();
            c.policy = policy;
            let out = simulate(&c);
            SimulatedRun {
                policy,
                writers: out.writers,
                samples: out.samples,
                events: out.events,
                start: Some(out.start),
            }
        })
        .collect();
    Raw { runs }
}
