//! `oslab tweak`: temporary sysctl changes that are always put back.

use clap::Args;
use oslab_arg_values::seconds;

use std::time::Duration;

use oslab_sys::fsread::Root;
use oslab_sys::{journal, process, sysctl};

use crate::failure::CmdResult;
use crate::failure::{EXIT_PRIVILEGE, Failure};

#[derive(Debug, Args)]
pub struct TweakArgs {
    /// Settings as NAME=VALUE, e.g. vm.dirty_background_bytes=33554432
    #[arg(required = true, value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
    /// Restore after this long, e.g. 30s or 5ms (default: when the command ends, or
    /// on Ctrl-C)
    #[arg(long = "for", value_name = "DURATION", allow_negative_numbers = true, value_parser = seconds(0.0, 31_536_000.0))]
    pub duration: Option<f64>,
    /// A command to run with the settings in force
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

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
    let Ok(current) = sysctl::read(&Root::live(), &name) else {
        return Err(Failure::usage(format!(
            "there is no sysctl '{name}' on this kernel (no {})",
            sysctl::sysctl_path(&name)
        )));
    };
    let value = value.trim().to_string();
    check_value(&name, &current, &value)?;
    Ok((name, value))
}

/// The kernel takes what it can parse of a value and drops the rest (`30 x` sets
/// 30, an empty value changes nothing and succeeds), so the value is checked
/// first: something, on one line, and for a setting that holds numbers (one, or
/// several as vm.lowmem_reserve_ratio) whole numbers only, no more than it holds
/// (the kernel sets the first ones of fewer).
fn check_value(name: &str, current: &str, value: &str) -> Result<(), Failure> {
    if value.is_empty() {
        return Err(Failure::usage(format!(
            "{name}= gives no value (e.g. {name}={})",
            current.trim()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(Failure::usage(format!(
            "the value for {name} holds a line break or control character"
        )));
    }
    let numbers = |t: &str| -> Option<usize> {
        let fields: Vec<&str> = t.split_whitespace().collect();
        fields
            .iter()
            .all(|f| f.parse::<i64>().is_ok())
            .then_some(fields.len())
    };
    match (numbers(current), numbers(value)) {
        (Some(n), given) if n > 0 && !given.is_some_and(|k| (1..=n).contains(&k)) => {
            Err(Failure::usage(format!(
                "{name}={value}: give {} (it is {} now)",
                if n == 1 {
                    "a whole number".to_string()
                } else {
                    format!("up to {n} whole numbers")
                },
                current.trim()
            )))
        }
        _ => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::EXIT_USAGE;

    fn refused(name: &str, current: &str, value: &str) -> String {
        let f = check_value(name, current, value).unwrap_err();
        assert_eq!(f.code, EXIT_USAGE);
        f.message
    }

    #[test]
    fn a_value_is_what_the_setting_holds() {
        assert!(check_value("vm.dirty_ratio", "20\n", "30").is_ok());
        assert!(
            check_value("vm.dirty_ratio", "20", "-1").is_ok(),
            "the kernel judges ranges"
        );
        assert!(check_value("vm.lowmem_reserve_ratio", "256\t256\t32\t0", "1 2 3 4").is_ok());
        assert!(check_value("kernel.core_pattern", "core", "/tmp/core.%p").is_ok());
        assert_eq!(
            refused("vm.dirty_ratio", "20", ""),
            "vm.dirty_ratio= gives no value (e.g. vm.dirty_ratio=20)"
        );
        assert_eq!(
            refused("vm.dirty_ratio", "20", "30 x"),
            "vm.dirty_ratio=30 x: give a whole number (it is 20 now)"
        );
        assert!(refused("vm.dirty_ratio", "20", "3.5").contains("a whole number"));
        assert!(check_value("kernel.printk", "4\t4\t1\t7", "3").is_ok());
        assert!(
            refused("vm.lowmem_reserve_ratio", "256 256 32 0", "1 2 3 4 5")
                .contains("up to 4 whole numbers")
        );
        assert!(refused("kernel.printk", "4 4 1 7", "3 x").contains("up to 4 whole numbers"));
        assert!(refused("kernel.core_pattern", "core", "a\nb").contains("line break"));
    }
}
