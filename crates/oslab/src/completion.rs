//! Completions from the binary itself (clap_complete's dynamic engine): the script
//! `oslab completions SHELL` prints calls oslab back with `OSLAB_COMPLETE=SHELL` as
//! the user presses Tab, so experiment ids, scenario names and setting keys are
//! always this binary's own.

use std::ffi::OsStr;

use clap_complete::engine::{
    ArgValueCandidates, ArgValueCompleter, CompletionCandidate, PathCompleter, ValueCompleter,
};
use clap_complete::env::EnvCompleter;

/// The variable that turns a run of oslab into a completion request.
pub const VAR: &str = "OSLAB_COMPLETE";

/// The shell code that registers oslab's completions for `shell`; it calls back
/// the binary named `completer` (see [`completer`]).
pub fn registration(shell: clap_complete::Shell, completer: &str) -> Result<Vec<u8>, String> {
    let env: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &clap_complete::env::Bash,
        clap_complete::Shell::Elvish => &clap_complete::env::Elvish,
        clap_complete::Shell::Fish => &clap_complete::env::Fish,
        clap_complete::Shell::PowerShell => &clap_complete::env::Powershell,
        clap_complete::Shell::Zsh => &clap_complete::env::Zsh,
        other => return Err(format!("no completions for {other} yet")),
    };
    let mut out = Vec::new();
    env.write_registration(VAR, "oslab", "oslab", completer, &mut out)
        .map_err(|e| format!("cannot write the completions: {e}"))?;
    if shell == clap_complete::Shell::Zsh {
        // Loaded from $fpath, the file's body runs as _oslab on the first Tab: it
        // only registers the completer, so that Tab would complete nothing.
        out.extend_from_slice(
            b"if [[ ${funcstack[1]} = _oslab ]]; then _clap_dynamic_completer_oslab \"$@\"; fi\n",
        );
    }
    Ok(out)
}

/// How the completion code calls oslab back: `oslab`, the binary the shell finds
/// on $PATH as it does when the user types the command, never the folder the
/// code was generated from (a build folder that a rebuild or a clean removes).
pub fn completer() -> String {
    "oslab".into()
}

fn candidate(value: &str, help: &str) -> CompletionCandidate {
    CompletionCandidate::new(value).help((!help.is_empty()).then(|| help.to_string().into()))
}

/// `oslab run ID...`: every experiment, each family (`cpu`, `wb`, ...) and `all`.
pub fn experiment_ids() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        let reg = oslab_lab::Registry::default();
        let mut out = vec![candidate("all", "every experiment")];
        let mut families: Vec<&str> = Vec::new();
        for e in reg.all() {
            let m = e.meta();
            if let Some(f) = m.id.split_once('.').map(|(f, _)| f)
                && !families.contains(&f)
            {
                families.push(f);
                out.push(candidate(f, "the family"));
            }
            out.push(candidate(m.id, m.title));
        }
        out
    })
}

/// The experiments named on the line being completed: the words after `run` (the
/// shell hands them over after `--`, the word being completed last) that are an
/// experiment, a family or `all`.
fn typed_experiments(words: &[String]) -> Vec<String> {
    let reg = oslab_lab::Registry::default();
    let typed = words.split_last().map_or(&[][..], |(_, before)| before);
    typed
        .iter()
        .skip_while(|w| *w != "run")
        .skip(1)
        .filter(|w| reg.resolve(std::slice::from_ref(*w)).is_ok())
        .cloned()
        .collect()
}

/// `--set NAME=` of `oslab run`: the settings of the experiments already named
/// (`oslab run mem.latency --set <TAB>`), else of every experiment, each once.
pub fn run_settings() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let reg = oslab_lab::Registry::default();
        let words: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
        let named = typed_experiments(&words);
        let chosen: Vec<&dyn oslab_harness::AnyExperiment> = match reg.resolve(&named) {
            Ok(list) if !list.is_empty() => list,
            _ => reg.all().collect(),
        };
        let mut names: Vec<(&str, &str)> = Vec::new();
        for e in chosen {
            for st in e.settings() {
                if !names.iter().any(|(n, _)| *n == st.name()) {
                    names.push((st.name(), st.help()));
                }
            }
        }
        setting_names(current, &names)
    })
}

/// `--set KEY=` of `oslab sim run|sweep|advise`: the simulator's settings.
pub fn sim_settings() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let names: Vec<(&str, &str)> = oslab_wbsim::keys::KEYS
            .iter()
            .map(|k| (k.setting.name(), k.setting.help()))
            .collect();
        setting_names(current, &names)
    })
}

/// `NAME=` for each name that begins with what is typed; nothing once the `=` is
/// there (the value is the user's).
fn setting_names(current: &OsStr, names: &[(&str, &str)]) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    if typed.contains('=') {
        return Vec::new();
    }
    names
        .iter()
        .filter(|(n, _)| n.starts_with(typed.as_ref()))
        .map(|(n, help)| candidate(&format!("{n}="), help))
        .collect()
}

/// `oslab sim run|sweep|advise SCENARIO`: the built-in scenarios (a .toml file
/// completes as a path).
pub fn scenario_names() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let typed = current.to_string_lossy();
        let mut out: Vec<CompletionCandidate> = oslab_wbsim::scenario::builtin()
            .into_iter()
            .filter(|s| s.name.starts_with(typed.as_ref()))
            .map(|s| candidate(&s.name, &s.title))
            .collect();
        out.extend(PathCompleter::any().complete(current));
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(c: Vec<CompletionCandidate>) -> Vec<String> {
        c.iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn setting_keys_end_in_an_equals_sign_and_stop_at_the_value() {
        let names = [("dirty_bytes", "a"), ("dirty_ratio", "b"), ("hz", "")];
        assert_eq!(
            values(setting_names(OsStr::new("dirty_"), &names)),
            ["dirty_bytes=", "dirty_ratio="]
        );
        assert!(setting_names(OsStr::new("hz=2"), &names).is_empty());
        assert_eq!(values(setting_names(OsStr::new(""), &names)).len(), 3);
    }

    #[test]
    fn the_experiments_named_before_the_word_being_completed_are_found() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            typed_experiments(&words(&[
                "oslab",
                "run",
                "mem.latency",
                "--quick",
                "--set",
                ""
            ])),
            ["mem.latency"]
        );
        assert_eq!(
            typed_experiments(&words(&["oslab", "run", "cpu", "nonsense", "--set", "cpu"])),
            ["cpu"],
            "a family counts; the word being completed does not"
        );
        assert!(typed_experiments(&words(&["oslab", "run", "--set", ""])).is_empty());
    }
}
