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
