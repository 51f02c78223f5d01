//! `oslab completions` and `oslab man`: shell completions and manual pages made from
//! the command-line grammar itself, so they never fall behind it.

use clap::CommandFactory;

use crate::CmdResult;
use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::failure::Failure;
use crate::output::{check_dir_target, make_dir, print_bytes};

pub fn completions(a: CompletionsArgs) -> CmdResult {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "oslab", &mut out);
    print_bytes(&out);
    Ok(0)
}

pub fn man(a: ManArgs) -> CmdResult {
    let cmd = Cli::command();
    let Some(dir) = a.dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut out)
            .map_err(|e| Failure::runtime(format!("cannot render the manual page: {e}")))?;
        print_bytes(&out);
        return Ok(0);
    };
    check_dir_target(&dir, "--dir")?;
    make_dir(&dir, "--dir")?;
    clap_mangen::generate_to(cmd, &dir)
        .map_err(|e| Failure::runtime(format!("cannot write pages into {}: {e}", dir.display())))?;
    let pages = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".1"))
                .count()
        })
        .unwrap_or(0);
    eprintln!(
        "oslab: wrote {pages} manual pages into {} (read one with: man {}/oslab-run.1)",
        dir.display(),
        dir.display()
    );
    Ok(0)
}
