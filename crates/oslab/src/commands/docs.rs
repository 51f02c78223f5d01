//! `oslab completions` and `oslab man`: shell completions and manual pages made from
//! the command-line grammar itself, so they never fall behind it.

use std::path::PathBuf;

use clap::Args;

use crate::failure::CmdResult;
use crate::failure::Failure;
use crate::output::{check_dir_target, make_dir, print_bytes, write_file};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
    #[command(flatten)]
    pub no_table: crate::args::NoTable,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write a page for oslab and each of its commands into DIR (made if missing)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub no_table: crate::args::NoTable,
}

/// `oslab completions SHELL`: the shell code that asks this binary for every
/// completion (see [`crate::completion`]).
pub fn completions(a: CompletionsArgs) -> CmdResult {
    let out = crate::completion::registration(a.shell, &crate::completion::completer())
        .map_err(Failure::runtime)?;
    print_bytes(&out);
    Ok(0)
}

/// `oslab man [--dir DIR]`: `cmd` is the whole grammar.
pub fn man(a: ManArgs, cmd: clap::Command) -> CmdResult {
    let Some(dir) = a.dir else {
        print_bytes(&page(&clap_mangen::Man::new(cmd))?);
        return Ok(0);
    };
    check_dir_target(&dir, "--dir")?;
    make_dir(&dir, "--dir")?;
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let pages = write_pages(cmd, &dir)?;
    eprintln!(
        "oslab: wrote {pages} manual pages into {} (read one with: man {}/oslab-run.1)",
        dir.display(),
        dir.display()
    );
    Ok(0)
}

/// Writes the page of `cmd` and of each visible subcommand, at any depth, into
/// `dir` (as `clap_mangen::generate_to` would, but each page through
/// [`write_file`], which never writes through a link planted in the folder); how
/// many.
fn write_pages(cmd: clap::Command, dir: &std::path::Path) -> Result<usize, Failure> {
    let mut pages = 0;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages += write_pages(sub.clone(), dir)?;
    }
    let man = clap_mangen::Man::new(cmd);
    write_file(&dir.join(man.get_filename()), &page(&man)?)?;
    Ok(pages + 1)
}

/// The page clap makes from the grammar, and the sections it cannot
/// ([`crate::manual`]).
fn page(man: &clap_mangen::Man) -> Result<Vec<u8>, Failure> {
    let name = man.get_filename();
    let mut out = Vec::new();
    man.render(&mut out)
        .map_err(|e| Failure::runtime(format!("cannot render the manual page: {e}")))?;
    let stem = name.strip_suffix(".1").unwrap_or(&name);
    out.extend_from_slice(crate::manual::sections(stem).as_bytes());
    Ok(out)
}
