//! The output flags of the commands that make results (`--json`, `--csv`,
//! `--plots`, `--html`) and the one place that turns them into exporters: every
//! target is checked, and every folder made, before anything runs. A new format is
//! one exporter in `oslab-report`, one field in [`OutputArgs`] and one line in
//! [`OutputArgs::requested`].

use std::path::{Path, PathBuf};

use clap::{Arg, Args};
use oslab_report::csv_out::Csv;
use oslab_report::exporter::{Exporter, Results};
use oslab_report::html::Html;
use oslab_report::json::Json;
use oslab_report::svg::Svg;
use oslab_report::terminal::Terminal;

use crate::db::Database;
use crate::failure::Failure;
use crate::output::{
    Destination, Output, check_dir_target, check_file_target, is_stdout, make_dir,
};

/// Where results are written beside the terminal's tables. A command whose help
/// words a flag differently says so with [`worded`] (the flags stay the same).
#[derive(Debug, Default, Args)]
pub struct OutputArgs {
    /// Write all results as JSON to FILE (`-` for standard output, which then holds only JSON)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write CSV files (samples, summary, findings, claims) of every result into DIR
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Write every plot as an SVG file into DIR
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Also write one self-contained HTML report of every result to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// For `#[command(mut_args(worded(&[(ID, HELP), ...])))]`: the help of each
/// argument named, changed in place (`mut_arg` would move it to the end of the
/// completions' lists).
pub fn worded(helps: &'static [(&'static str, &'static str)]) -> impl FnMut(Arg) -> Arg {
    |a| match helps.iter().find(|(id, _)| a.get_id() == *id) {
        Some((_, help)) => a.help(*help),
        None => a,
    }
}

/// What a format's path names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// One file; `-` (or a path to standard output) there means standard output.
    File,
    /// A file, or standard output which then holds nothing else (no tables).
    FileOrStdoutAlone,
    /// A folder, made if missing, that gets one file per piece.
    Folder,
}

/// One format the user asked for.
struct Requested<'a> {
    flag: &'static str,
    path: &'a Path,
    target: Target,
    exporter: MakeExporter,
}

type MakeExporter = fn() -> Box<dyn Exporter<Results>>;

/// A format, if its flag was given.
fn format<'a>(
    path: &'a Option<PathBuf>,
    flag: &'static str,
    target: Target,
    exporter: MakeExporter,
) -> Option<Requested<'a>> {
    path.as_deref().map(|path| Requested {
        flag,
        path,
        target,
        exporter,
    })
}

impl OutputArgs {
    /// The formats asked for, in the order they are checked and written.
    fn requested(&self) -> Vec<Requested<'_>> {
        [
            format(&self.json, "--json", Target::FileOrStdoutAlone, || {
                Box::new(Json)
            }),
            format(&self.html, "--html", Target::File, || Box::new(Html)),
            format(&self.csv, "--csv", Target::Folder, || Box::new(Csv)),
            format(&self.plots, "--plots", Target::Folder, || Box::new(Svg)),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The JSON file named, as given (`-` included): where the database's
    /// fallback copy goes.
    pub fn json_file(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}

/// The exporters a command's output flags chose, their targets checked.
pub struct Exports {
    chosen: Vec<(Box<dyn Exporter<Results>>, Destination)>,
    tables: bool,
}

impl Exports {
    /// Checks every target of `args` (and `more_folders`, such as `--save-raw`)
    /// before anything runs, then makes the folders; the exporters.
    pub fn from_args(
        args: &OutputArgs,
        more_folders: &[(&Path, &str)],
    ) -> Result<Exports, Failure> {
        let requested = args.requested();
        let mut folders: Vec<(&Path, &str)> = Vec::new();
        let mut tables = true;
        for r in &requested {
            match r.target {
                Target::FileOrStdoutAlone if is_stdout(r.path) => tables = false,
                Target::File | Target::FileOrStdoutAlone => check_file_target(r.path, r.flag)?,
                Target::Folder => folders.push((r.path, r.flag)),
            }
        }
        folders.extend_from_slice(more_folders);
        for (dir, flag) in &folders {
            check_dir_target(dir, flag)?;
        }
        for (dir, flag) in &folders {
            make_dir(dir, flag)?;
        }
        let chosen = requested
            .iter()
            .map(|r| {
                let to = match r.target {
                    Target::Folder => Destination::Folder(r.path.to_path_buf()),
                    Target::File | Target::FileOrStdoutAlone => {
                        Destination::file_per_result(r.path)
                    }
                };
                ((r.exporter)(), to)
            })
            .collect();
        Ok(Exports { chosen, tables })
    }

    /// The outputs in the order they write: the database, the tables (unless
    /// standard output holds only JSON), then each format asked for.
    pub fn into_outputs(self, db: Option<Database>) -> Vec<Output<Results>> {
        let mut out = Vec::new();
        if let Some(db) = db {
            out.push(Output::new(db, Destination::Kept));
        }
        if self.tables {
            let width = crate::term::width();
            out.push(Output::new(Terminal { width }, Destination::Stdout));
        }
        out.extend(
            self.chosen
                .into_iter()
                .map(|(exporter, to)| Output::boxed(exporter, to)),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path) -> OutputArgs {
        OutputArgs {
            json: Some(dir.join("r.json")),
            csv: Some(dir.join("csv")),
            plots: Some(dir.join("plots")),
            html: Some(dir.join("r.html")),
        }
    }

    #[test]
    fn every_format_asked_for_is_an_output_after_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        let exports = Exports::from_args(&args(dir.path()), &[]).unwrap();
        assert!(exports.tables);
        assert_eq!(exports.chosen.len(), 4);
        assert!(dir.path().join("csv").is_dir() && dir.path().join("plots").is_dir());
        assert_eq!(exports.into_outputs(None).len(), 5);
    }

    #[test]
    fn json_on_standard_output_leaves_out_the_tables() {
        let a = OutputArgs {
            json: Some(PathBuf::from("-")),
            ..OutputArgs::default()
        };
        let exports = Exports::from_args(&a, &[]).unwrap();
        assert!(!exports.tables);
        assert_eq!(exports.into_outputs(None).len(), 1);
    }

    #[test]
    fn one_unfit_target_stops_before_any_folder_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path());
        let raw = dir.path().join("raw");
        a.html = Some(dir.path().join("missing").join("r.html"));
        let refused = Exports::from_args(&a, &[(&raw, "--save-raw")])
            .err()
            .unwrap();
        assert!(refused.message.contains("--html"), "{}", refused.message);
        a.html = None;
        let missing = dir.path().join("missing").join("raw");
        let refused = Exports::from_args(&a, &[(&missing, "--save-raw")])
            .err()
            .unwrap();
        assert!(
            refused.message.contains("--save-raw"),
            "{}",
            refused.message
        );
        for made in ["csv", "plots", "raw"] {
            assert!(!dir.path().join(made).exists(), "{made} was made");
        }
    }
}
