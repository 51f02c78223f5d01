//! The oslab binary: parses the command line and hands it to the command it
//! names (`commands`); the work is done in the library crates.
#![forbid(unsafe_code)]

mod args;
mod child;
mod commands;
mod completion;
mod db;
mod exports;
mod failure;
mod guard;
mod manual;
mod output;
mod pending;
mod progress;
mod results;
mod scratch;
mod sources;
mod term;
mod testbed_state;

use clap::Parser;

use crate::commands::Cli;

fn main() {
    // a Tab in the shell: answer and exit before anything else runs
    clap_complete::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command)
        .var(completion::VAR)
        .complete();
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
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(f) => {
            output::say(&f.message);
            f.code
        }
    };
    guard::exit(code);
}
