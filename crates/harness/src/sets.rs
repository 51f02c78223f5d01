//! `oslab run ID --set NAME=VALUE`: each value parsed once against the
//! declaration of every selected experiment that has the setting, in the grammar
//! the simulator's `--set` shares ([`oslab_settings::split_assignment`]).

use super::any::AnyExperiment;
use super::context::Sets;

/// Parses `args` for `experiments`: a name no selected experiment declares, or a
/// value of the wrong kind or out of range, is one sentence naming it.
pub fn parse(args: &[String], experiments: &[&dyn AnyExperiment]) -> Result<Sets, String> {
    let mut out = Sets::new();
    for arg in args {
        let (name, value) = oslab_settings::split_assignment(arg)?;
        let owners: Vec<_> = experiments
            .iter()
            .filter_map(|e| {
                e.settings()
                    .iter()
                    .find(|st| st.name() == name)
                    .map(|st| (e.meta().id, *st))
            })
            .collect();
        if owners.is_empty() {
            return Err(unknown(name, experiments));
        }
        for (id, st) in owners {
            out.insert((id.to_string(), name.to_string()), st.parse_value(value)?);
        }
    }
    Ok(out)
}

fn unknown(name: &str, experiments: &[&dyn AnyExperiment]) -> String {
    let known: Vec<&str> = experiments
        .iter()
        .flat_map(|e| e.settings().iter().map(|st| st.name()))
        .collect();
    if known.is_empty() {
        format!("{name}: the selected experiments have no settings")
    } else {
        format!(
            "{name}: no selected experiment has that setting (known: {})",
            known.join(", ")
        )
    }
}
