//! `oslab compare`

use crate::args::{DbArg, MaxInputArg};
use clap::Args;
use oslab_arg_values::whole;
use std::path::PathBuf;

use oslab_model::compare::{Comparison, compare, side};
use oslab_report::exporter::Stage;
use oslab_report::html::Html;
use oslab_report::json::Json;
use oslab_report::terminal::Terminal;

use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::{Destination, Output, check_file_target, is_stdout, write_all};
use crate::sources::{LazyStore, Loaded, load};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two run ids (see `oslab history`; `latest` for the newest) or result files
    /// (`oslab run --json`)
    #[arg(value_name = "A B", num_args = 0..=2)]
    pub sides: Vec<String>,
    /// Compare the newest results of two machines instead (give it twice)
    #[arg(long = "machine", value_name = "NAME")]
    pub machines: Vec<String>,
    /// Also write the comparison as a self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the comparison as JSON to FILE (`-` for standard output only)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Seed of the permutation tests' shuffles
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = whole(0, u64::MAX))]
    pub seed: u64,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub input: MaxInputArg,
}

fn by_machine(store: &mut LazyStore, name: &str) -> Result<Loaded, Failure> {
    let s = store.get()?;
    let results = s
        .latest_on_machine(name)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    if results.is_empty() {
        let known = s.machines().map_err(|e| Failure::runtime(e.to_string()))?;
        return Err(Failure::runtime(format!(
            "no completed results for machine {name} in {} (machines there: {})",
            s.location(),
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )));
    }
    Ok(Loaded {
        label: format!("machine {name}"),
        results,
    })
}

pub fn run(a: CompareArgs) -> CmdResult {
    if !matches!((a.sides.len(), a.machines.len()), (2, 0) | (0, 2)) {
        return Err(Failure::usage(
            "compare takes two run ids or result files (oslab compare A B), or two machines (--machine X --machine Y)",
        ));
    }
    if let Some(p) = &a.html {
        check_file_target(p, "--html")?;
    }
    let json_stdout = a.json.as_deref().is_some_and(is_stdout);
    if let Some(p) = a.json.as_ref().filter(|_| !json_stdout) {
        check_file_target(p, "--json")?;
    }
    let mut store = LazyStore::new(a.db.db.as_deref());
    let (x, y) = if a.machines.is_empty() {
        (
            load(&a.sides[0], &mut store, a.input.max_input)?,
            load(&a.sides[1], &mut store, a.input.max_input)?,
        )
    } else {
        (
            by_machine(&mut store, &a.machines[0])?,
            by_machine(&mut store, &a.machines[1])?,
        )
    };
    let c = compare(
        side(&x.label, &x.results),
        &x.results,
        side(&y.label, &y.results),
        &y.results,
        a.seed,
    );
    let mut outputs: Vec<Output<Comparison>> = Vec::new();
    if let Some(p) = &a.html {
        outputs.push(Output::new(Html, Destination::file(p)));
    }
    match &a.json {
        Some(_) if json_stdout => outputs.push(Output::new(Json, Destination::Stdout)),
        Some(p) => outputs.push(Output::new(Json, Destination::file(p))),
        None => {}
    }
    if !json_stdout {
        outputs.push(Output::new(
            Terminal {
                width: crate::term::width(),
            },
            Destination::Stdout,
        ));
    }
    write_all(&mut outputs, &c, Stage::Done)?;
    Ok(0)
}
