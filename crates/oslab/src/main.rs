//! The oslab command line: wiring only; the work is done in the library crates.
#![forbid(unsafe_code)]

mod child;
mod cli;
mod cli_values;
mod cmd_compare;
mod cmd_dirty;
mod cmd_docs;
mod cmd_export;
mod cmd_history;
mod cmd_import;
mod cmd_info;
mod cmd_judge;
mod cmd_list;
mod cmd_report;
mod cmd_restore;
mod cmd_run;
mod cmd_sim;
mod cmd_sim_advise;
mod cmd_stalls;
mod cmd_testbed;
mod cmd_tweak;
mod cmd_watch;
mod cmd_wcall;
mod db;
mod failure;
mod guard;
mod output;
mod progress;
mod sources;
mod term;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::failure::Failure;

fn main() {
    guard::install();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version print and exit 0; bad usage exits 2.
            if let Err(io) = e.print()
                && !e.use_stderr()
            {
                output::stdout_failed(&io);
            }
            guard::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    term::set_wide(cli.wide);
    let result = match cli.command {
        Command::Info(a) => cmd_info::run(a),
        Command::List(a) => cmd_list::run(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Restore(a) => cmd_restore::run(a),
        Command::Sim(c) => cmd_sim::run(c),
        Command::Testbed(c) => cmd_testbed::run(c),
        Command::Stalls(a) => cmd_stalls::run(a),
        Command::Dirty(c) => cmd_dirty::run(c),
        Command::Watch(a) => cmd_watch::run(a),
        Command::Tweak(a) => cmd_tweak::run(a),
        Command::Wcall(c) => cmd_wcall::run(c),
        Command::Report(a) => cmd_report::run(a),
        Command::History(a) => cmd_history::run(a),
        Command::Compare(a) => cmd_compare::run(a),
        Command::Export(a) => cmd_export::run(a),
        Command::Import(a) => cmd_import::run(a),
        Command::Judge(a) => cmd_judge::run(a),
        Command::Completions(a) => cmd_docs::completions(a),
        Command::Man(a) => cmd_docs::man(a),
    };
    let code = match result {
        Ok(code) => code,
        Err(f) => {
            eprintln!("oslab: {}", f.message);
            f.code
        }
    };
    guard::exit(code);
}

/// Kept for the type's users in submodules.
pub type CmdResult = Result<i32, Failure>;
