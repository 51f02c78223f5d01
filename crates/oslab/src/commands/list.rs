//! `oslab list`

use clap::Args;

use oslab_lab::Registry;

use crate::failure::CmdResult;
use crate::output::print;

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub json: crate::args::JsonArg,
    /// Also list each experiment's settings (for `oslab run --set`)
    #[arg(long)]
    pub settings: bool,
}

fn secs(s: f64) -> String {
    if s < 60.0 {
        format!("~{s:.0} s")
    } else {
        format!("~{:.0} min", s / 60.0)
    }
}

/// `oslab list --json FILE`: every experiment with its settings.
fn list_json(reg: &Registry) -> Vec<serde_json::Value> {
    reg.all()
        .map(|e| {
            let m = e.meta();
            serde_json::json!({
                "id": m.id,
                "title": m.title,
                "section": m.section,
                "after": oslab_report::source::of_section(m.section),
                "summary": m.summary,
                "needs_root": m.needs.root,
                "quick_s": m.quick_s,
                "full_s": m.full_s,
                "internal": m.internal,
                "settings": e.settings().iter().map(|s| {
                    let (quick, full) = s.defaults();
                    serde_json::json!({
                        "name": s.name(), "kind": s.kind_label(), "help": s.help(),
                        "quick": quick, "full": full, "range": s.range(),
                    })
                }).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// `oslab list --settings`: every experiment's settings.
fn list_settings(reg: &Registry) -> CmdResult {
    let rows: Vec<Vec<String>> = reg
        .all()
        .flat_map(|e| {
            e.settings().iter().map(move |s| {
                let (quick, full) = s.defaults();
                vec![
                    e.meta().id.to_string(),
                    s.name().to_string(),
                    s.kind_label(),
                    if quick == full {
                        full
                    } else {
                        format!("{full} (quick {quick})")
                    },
                    s.range().unwrap_or_else(|| "-".into()),
                    s.help().to_string(),
                ]
            })
        })
        .collect();
    print("Settings (oslab run ID --set NAME=VALUE)\n");
    print(&oslab_report::table::fit(
        &[
            "experiment",
            "setting",
            "kind",
            "default",
            "range",
            "meaning",
        ],
        &rows,
        &[],
        crate::term::width(),
    ));
    Ok(0)
}

pub fn run(a: ListArgs) -> CmdResult {
    a.json.check()?;
    let reg = Registry::default();
    if a.json.json.is_some() && a.json.write(&list_json(&reg))? {
        return Ok(0);
    }
    if a.settings {
        return list_settings(&reg);
    }
    let rows: Vec<Vec<String>> = reg
        .all()
        .map(|e| {
            let m = e.meta();
            vec![
                m.id.to_string(),
                m.title.to_string(),
                oslab_report::source::short_of_section(m.section),
                if m.needs.root { "yes" } else { "no" }.to_string(),
                secs(m.quick_s),
                secs(m.full_s),
                m.summary.to_string(),
            ]
        })
        .collect();
    print(&oslab_report::table::fit(
        &["id", "title", "after", "root", "--quick", "full", "shows"],
        &rows,
        &[4, 5],
        crate::term::width(),
    ));
    print("\n'oslab run ID...' runs experiments; 'oslab run all --quick' runs the whole lab.\n");
    Ok(0)
}
