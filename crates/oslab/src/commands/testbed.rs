//! `oslab testbed up | down | status`

use clap::{Args, Subcommand};
use std::path::PathBuf;

use oslab_arg_values::size;
use oslab_services::testbed::{self, Testbed, parse_bandwidth};
use oslab_sys::journal::{Journal, Undo, named_dir};
use oslab_units::human_bytes;

use crate::failure::CmdResult;
use crate::failure::{EXIT_PRIVILEGE, Failure};
use crate::output::print;
use crate::scratch::scratch_base;
use crate::testbed_state::{NAME, current, state_path};

#[derive(Debug, Subcommand)]
pub enum TestbedCommand {
    /// Build it: loop device over a sparse file, ext4, write bandwidth cap; measures itself
    Up(TestbedUpArgs),
    /// Take it down (also done by `oslab restore`)
    Down,
    /// Show the testbed that is up, if any
    Status,
}

/// The smallest image a testbed is built on.
const MIN_SIZE: u64 = 64 << 20;

#[derive(Debug, Args)]
pub struct TestbedUpArgs {
    /// Write bandwidth cap, e.g. 10MiB/s
    #[arg(long, value_name = "RATE", allow_hyphen_values = true, value_parser = parse_bandwidth)]
    pub bandwidth: u64,
    /// Size of the sparse image
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "2GiB",
        allow_hyphen_values = true,
        value_parser = size(MIN_SIZE, u64::MAX)
    )]
    pub size: u64,
    /// Where the image and mount point go [default: $TMPDIR]
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

fn describe(tb: &Testbed) -> String {
    let notes: String = tb
        .notes()
        .iter()
        .map(|n| format!("  note: {n}\n"))
        .collect();
    format!("{}{notes}", cap_line(tb))
}

fn cap_line(tb: &Testbed) -> String {
    format!(
        "testbed up: {} ({}) over {} ({} sparse), ext4 mounted on {}\n  write cap {}/s, measured {:.1} MiB/s sustained write back\n  {}{}\n",
        tb.device.display(),
        tb.dev,
        tb.image.display(),
        human_bytes(tb.size_bytes),
        tb.mount.display(),
        human_bytes(tb.bandwidth_bytes_s),
        tb.measured_bytes_s / (1 << 20) as f64,
        tb.cap.describe(),
        match &tb.cap {
            testbed::Cap::BlkioV1 => String::new(),
            testbed::Cap::IoMaxV2(c) => format!(
                "; run a writer there with: echo $$ > {}/cgroup.procs",
                c.lab.display()
            ),
        }
    )
}

fn up(a: TestbedUpArgs) -> CmdResult {
    let (bw, size) = (a.bandwidth, a.size);
    let base = scratch_base(a.scratch.as_deref())?;
    if let Some(why) = testbed::unavailable() {
        return Err(Failure {
            code: EXIT_PRIVILEGE,
            message: format!("{why}; nothing was changed"),
        });
    }
    let dir = named_dir(NAME);
    if Journal::load(&dir, NAME)
        .map_err(|e| Failure::runtime(e.to_string()))?
        .is_some()
    {
        return Err(Failure::usage(
            "a testbed is already up ('oslab testbed status'); take it down first with 'oslab testbed down'",
        ));
    }
    let mut j = Journal::named(&dir, NAME);
    j.record(
        "testbed description".to_string(),
        Undo::RemovePath { path: state_path() },
    )
    .map_err(|e| Failure::runtime(e.to_string()))?;
    eprintln!("oslab: building the testbed and measuring it (a few seconds)");
    let r = testbed::up(&base, size, bw, &mut |d, u| j.record(d, u));
    match r {
        Ok(tb) => {
            let text = serde_json::to_string_pretty(&tb).expect("serialises");
            let state = state_path();
            oslab_sys::outfile::write_whole(&state, text.as_bytes())
                .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", state.display())))?;
            // built: left up on purpose from here on, not a half-built one
            j.mark_complete()
                .map_err(|e| Failure::runtime(e.to_string()))?;
            print(&describe(&tb));
            if let Some(w) = tb.cap.scope_warning() {
                eprintln!("oslab: note: {w}");
            }
            print("take it down with 'oslab testbed down' (or 'oslab restore')\n");
            Ok(0)
        }
        Err(e) => {
            for o in j.undo_all() {
                if let Err(err) = o.result {
                    eprintln!("oslab: could not undo '{}': {err}", o.description);
                }
            }
            Err(Failure::runtime(format!(
                "testbed not built: {e}; every step was undone"
            )))
        }
    }
}

fn down() -> CmdResult {
    match Journal::load(&named_dir(NAME), NAME).map_err(|e| Failure::runtime(e.to_string()))? {
        None => {
            print("no testbed is up\n");
            Ok(0)
        }
        Some(mut j) => {
            let mut failed = 0;
            for o in j.undo_all() {
                match o.result {
                    Ok(()) => print(&format!("undone: {}\n", o.description)),
                    Err(e) => {
                        failed += 1;
                        print(&format!("FAILED: {}: {e}\n", o.description));
                    }
                }
            }
            Ok(if failed > 0 { 1 } else { 0 })
        }
    }
}

pub fn run(c: TestbedCommand) -> CmdResult {
    match c {
        TestbedCommand::Up(a) => up(a),
        TestbedCommand::Down => down(),
        TestbedCommand::Status => {
            match current() {
                Some(tb) => print(&describe(&tb)),
                None => print("no testbed is up\n"),
            }
            Ok(0)
        }
    }
}
