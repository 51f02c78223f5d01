//! The claim that governing loses no byte: every writer's file is read back after
//! its cell (the paced writer's blocks carry their number, dd's are zeros), in
//! governed cells and in those whose daemon was killed with SIGKILL mid-cell.

use oslab_model::Claim;
use oslab_wbsim::policy::Policy;

use super::cell_checks::judge_all;
use oslab_harness::check::{Check, Condition, Rule};
use oslab_services::cells::record::{Cell, Content};

pub const NO_BYTE_LOST: Check = Check {
    id: "no-byte-lost",
    tolerates: &oslab_harness::interference::ANY,
    text: "Every byte a governed writer writes reaches its file, also when the governor is killed mid-write",
    source: "oslab's rule for its governor: it may delay writes, never drop them (docs/wcall.md, \"What it cannot do, and says so\")",
};

fn label(c: &Cell, writer: &str) -> String {
    format!(
        "run {} {} {} {} {writer}",
        c.run + 1,
        c.policy.name(),
        c.scenario.name(),
        c.start.name()
    )
}

pub fn no_byte_lost(cells: &[Cell]) -> Claim {
    let governed: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.policy != Policy::Vanilla)
        .collect();
    let mut checked = 0usize;
    let mut wrong = Vec::new();
    for c in &governed {
        for w in &c.writers {
            match &w.content {
                Content::Intact => checked += 1,
                Content::Wrong(why) => {
                    checked += 1;
                    wrong.push(format!("{}: {why}", label(c, &w.name)));
                }
                Content::NotChecked => {}
            }
        }
    }
    let killed = governed
        .iter()
        .filter(|c| c.coordinator_killed_at_s.is_some())
        .count();
    let none = "no governed writer's file was checked (user commands are not)";
    let conditions = [
        Condition::from_option(
            "governed writers' files checked",
            "",
            Rule::AtLeast(1.0),
            (checked > 0).then_some(checked as f64),
            none.to_string(),
        ),
        Condition::new(
            "files that differ from what was written",
            "",
            Rule::AtMost(0.0),
            wrong.len() as f64,
        ),
    ];
    let cells = match governed.len() {
        1 => "1 governed cell".to_string(),
        n => format!("{n} governed cells"),
    };
    let context = format!(
        "{checked} files read back after {cells}; the daemon was killed (SIGKILL) mid-cell in {killed} of them"
    );
    judge_all(&NO_BYTE_LOST, &conditions, &context, |o| {
        if o.holds() {
            "each file holds every block its writer wrote, in order; a held writer's write() only waits, and a killed governor leaves its writers writing ungoverned".into()
        } else {
            wrong.join("; ")
        }
    })
}
