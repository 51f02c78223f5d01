//! `oslab tweak`: temporary sysctl changes that are always put back.

use std::time::Duration;

use oslab_sys::fsread::Root;
use oslab_sys::{journal, process, sysctl};

use crate::CmdResult;
use crate::cli::TweakArgs;
use crate::failure::{EXIT_PRIVILEGE, Failure};

/// Splits and checks `NAME=VALUE`; the name must be an existing sysctl.
fn parse_setting(s: &str) -> Result<(String, String), Failure> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| Failure::usage(format!("'{s}' is not NAME=VALUE")))?;
    let name = name.trim().replace('/', ".");
    let valid = !name.is_empty()
        && name.split('.').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if !valid {
        return Err(Failure::usage(format!("'{name}' is not a sysctl name")));
    }
    if sysctl::read(&Root::live(), &name).is_err() {
        return Err(Failure::usage(format!(
            "there is no sysctl '{name}' on this kernel (no {})",
            sysctl::sysctl_path(&name)
        )));
    }
    Ok((name, value.trim().to_string()))
}

/// A write the kernel refused (EINVAL: a value out of its range or not a number)
/// is the user's mistake; anything else is a failure of the machine.
fn refused(name: &str, value: &str, e: oslab_sys::SysError) -> Failure {
    match &e {
        oslab_sys::SysError::Write { source, .. }
            if source.kind() == std::io::ErrorKind::InvalidInput =>
        {
            Failure::usage(format!(
                "the kernel refused {name} = {value} (invalid argument: not a value this setting accepts); it was not changed"
            ))
        }
        _ => Failure::runtime(format!("cannot set {name} = {value}: {e}")),
    }
}

pub fn run(a: TweakArgs) -> CmdResult {
    let settings: Vec<(String, String)> = a
        .settings
        .iter()
        .map(|s| parse_setting(s))
        .collect::<Result<_, _>>()?;
    if let Some(d) = a.duration
        && !(d.is_finite() && d >= 0.0)
    {
        return Err(Failure::usage(format!(
            "--for {d} is not a number of seconds"
        )));
    }
    if !process::is_root() {
        return Err(Failure {
            code: EXIT_PRIVILEGE,
            message: "changing sysctls needs root; nothing was changed".into(),
        });
    }
    for (name, value) in &settings {
        journal::with_global(|j| sysctl::set(j, name, value))
            .map_err(|e| refused(name, value, e))?;
        let now = sysctl::read(&Root::live(), name).unwrap_or_default();
        eprintln!("oslab: {name} = {now} (was journaled; it is restored when this ends)");
    }
    if !a.command.is_empty() {
        let mut cmd = std::process::Command::new(&a.command[0]);
        cmd.args(&a.command[1..]);
        return crate::child::run_forwarding(&mut cmd, &a.command[0]);
    }
    match a.duration {
        Some(d) => std::thread::sleep(Duration::from_secs_f64(d)),
        None => {
            eprintln!("oslab: holding the settings; press Ctrl-C to restore them");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }
    Ok(0)
}
