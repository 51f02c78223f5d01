//! Argument groups several commands share: the input size limit and the results
//! database. (The output group is `exports::OutputArgs`.)

use std::path::PathBuf;

use clap::Args;

use oslab_arg_values::size;

/// The limit on every file a command reads (`oslab_sys::infile`).
#[derive(Debug, Clone, Copy, Args)]
pub struct MaxInputArg {
    /// Refuse an input file (or standard input) that holds, or decompresses to,
    /// more than SIZE, e.g. 4GiB
    #[arg(long = "max-input", value_name = "SIZE", default_value = "1GiB", value_parser = size(1, 1 << 50))]
    pub max_input: u64,
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The results database: an SQLite file or postgres://USER@HOST/DBNAME
    /// [default: $OSLAB_DB, else $XDG_DATA_HOME/oslab/results.db, else
    /// ~/.local/share/oslab/results.db]
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<PathBuf>,
}

/// `--json FILE` of a command that prints one document (or, for `watch`, one
/// line a sample): the same grammar as `run`'s, `-` for standard output.
#[derive(Debug, Default, Args)]
pub struct JsonArg {
    /// Also write it as JSON to FILE (`-` for standard output, which then holds
    /// only the JSON)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl JsonArg {
    /// Checks before any work that FILE can be written.
    pub fn check(&self) -> Result<(), crate::failure::Failure> {
        match &self.json {
            Some(p) if !crate::output::is_stdout(p) => {
                crate::output::check_file_target(p, "--json")
            }
            _ => Ok(()),
        }
    }

    /// Writes `value` as JSON where asked; true when it went to standard output
    /// (the caller then prints no table).
    pub fn write(&self, value: &impl serde::Serialize) -> Result<bool, crate::failure::Failure> {
        let Some(path) = &self.json else {
            return Ok(false);
        };
        let text = serde_json::to_string_pretty(value).expect("plain data serialises") + "\n";
        if crate::output::is_stdout(path) {
            crate::output::print(&text);
            return Ok(true);
        }
        crate::output::write_file(path, text.as_bytes())?;
        Ok(false)
    }
}

/// The global `--wide` of a command that prints no table: accepted, not offered
/// (an argument of the same name keeps clap from copying the global one, with its
/// help, into the command).
#[derive(Debug, Default, Args)]
pub struct NoTable {
    #[arg(long, hide = true)]
    pub wide: bool,
}
