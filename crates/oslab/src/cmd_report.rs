//! `oslab report`

use crate::CmdResult;
use crate::cli::ReportArgs;
use crate::output::{check_file_target, print, write_file};
use crate::sources::{LazyStore, load};

pub fn run(a: ReportArgs) -> CmdResult {
    if let Some(p) = &a.html {
        check_file_target(p, "--html")?;
    }
    let mut store = LazyStore::new(a.db.db.as_deref());
    let mut results = Vec::new();
    let mut labels = Vec::new();
    for s in &a.sources {
        let l = load(s, &mut store)?;
        labels.push(l.label);
        results.extend(l.results);
    }
    match &a.html {
        Some(p) => {
            let page = oslab_report::html::report(&results, &labels.join(", "));
            write_file(p, page.as_bytes())?;
            eprintln!(
                "oslab: wrote {} ({} experiment(s))",
                p.display(),
                results.len()
            );
        }
        None => {
            for r in &results {
                print(&oslab_report::table::render_result(r));
                print("\n");
            }
            if results.iter().any(|r| !r.claims.is_empty()) {
                print("Claims\n");
                print(&oslab_report::table::render_verdicts(&results));
                print("\n");
            }
        }
    }
    Ok(0)
}
