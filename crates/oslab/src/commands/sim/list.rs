//! `oslab sim list`: the built-in scenarios, or the settings `--set` can change.

use clap::Args;
use oslab_wbsim::{bounds, keys, scenario};

use crate::failure::CmdResult;
use crate::output::print;

#[derive(Debug, Args)]
pub struct SimListArgs {
    /// List the settings `oslab sim run|sweep --set KEY=VALUE` can change: kind,
    /// default, range and the scenario field each sets
    #[arg(long)]
    pub settings: bool,
}

pub fn run(a: SimListArgs) -> CmdResult {
    if a.settings {
        return list_settings();
    }
    let rows: Vec<Vec<String>> = scenario::builtin()
        .into_iter()
        .map(|s| vec![s.name, s.title, s.description])
        .collect();
    print(&oslab_report::table::simple(
        &["scenario", "title", "what"],
        &rows,
        &[],
    ));
    print(
        "\n'oslab sim run NAME' compares vanilla, wcall and wcall-fair; a .toml file works too (docs/sim-scenarios.md)\n",
    );
    Ok(0)
}

/// `oslab sim list --settings`: every `--set` key, from its declaration.
fn list_settings() -> CmdResult {
    let rows: Vec<Vec<String>> = keys::KEYS
        .iter()
        .map(|k| {
            let s = k.setting;
            vec![
                s.name().to_string(),
                s.kind_label(),
                if k.required {
                    "required".into()
                } else {
                    s.defaults().1
                },
                s.range().unwrap_or_else(|| "-".into()),
                k.field.to_string(),
                s.help().to_string(),
            ]
        })
        .collect();
    print(
        "Settings (oslab sim run|sweep SCENARIO --set KEY=VALUE; otherwise the scenario's own)\n",
    );
    print(&oslab_report::table::simple(
        &[
            "setting",
            "kind",
            "file default",
            "range",
            "scenario field",
            "meaning",
        ],
        &rows,
        &[],
    ));
    print(
        "\n\nFields only a scenario file sets, checked against these ranges as the settings are\n",
    );
    let bounded = |path: String, s: &dyn oslab_lab::settings::AnySetting| {
        vec![
            path,
            s.kind_label(),
            s.range().unwrap_or_else(|| "-".into()),
        ]
    };
    let rows: Vec<Vec<String>> = bounds::FIELDS
        .iter()
        .map(|f| bounded(f.path.to_string(), f.setting))
        .chain(
            bounds::WRITER_FIELDS
                .iter()
                .map(|f| bounded(format!("writers[].{}", f.path), f.setting)),
        )
        .collect();
    print(&oslab_report::table::simple(
        &["scenario field", "kind", "range"],
        &rows,
        &[],
    ));
    print("\n");
    Ok(0)
}
