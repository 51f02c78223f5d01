//! What `sim run`, `sweep` and `advise` read from the command line: a scenario by
//! name or file, `--set KEY=VALUE` pairs, a policy name, `--vary` values.

use std::path::{Path, PathBuf};

use oslab_harness::RunConfig;
use oslab_model::Mode;
use oslab_sys::infile;
use oslab_wbsim::profile::{MachineProfile, PROFILE_VERSION};
use oslab_wbsim::scenario::{self, Scenario, parse_bytes};
use oslab_wbsim::{Config, Policy, sets};

use crate::failure::Failure;

/// How `sim run` and `sim validate` word the output flags.
pub const SIM_OUTPUT_HELP: &[(&str, &str)] = &[
    (
        "json",
        "Write the results as JSON to FILE (`-` for standard output)",
    ),
    ("csv", "Write CSV files into DIR"),
    ("plots", "Write SVG plots into DIR"),
    ("html", "Write one self-contained HTML report to FILE"),
];

/// A built-in scenario by name, or a scenario file (`-`: standard input) of at
/// most `max_input` bytes. A file's errors name its path; its result is named
/// after its stem ([`result_name`]).
pub fn load(name: &str, max_input: u64) -> Result<Scenario, Failure> {
    let path = Path::new(name);
    if infile::is_stdin(path) || name.ends_with(".toml") || path.symlink_metadata().is_ok() {
        let text = infile::read_text(path, max_input)?;
        let mut s =
            scenario::from_toml(&infile::display_name(path), &text).map_err(Failure::usage)?;
        s.name = result_name(path);
        return Ok(s);
    }
    scenario::find(name).ok_or_else(|| {
        let names: Vec<String> = scenario::builtin().into_iter().map(|s| s.name).collect();
        Failure::usage(format!(
            "unknown scenario '{name}' (built in: {}; or give a .toml file)",
            names.join(", ")
        ))
    })
}

/// The name a scenario file's result goes by (`sim.NAME`, and so the files
/// `--csv` and `--plots` write): the file's stem, `stdin` for standard input.
/// The name becomes part of file names, so only letters, digits, `_` and `-`
/// are kept; anything else (a folder's `/`, a dot, a space) reads `-`.
fn result_name(path: &Path) -> String {
    if infile::is_stdin(path) {
        return "stdin".into();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.is_empty() {
        "scenario".into()
    } else {
        name
    }
}

/// Where a simulation's estimates start and which machine it describes, as `sim
/// run`, `sweep` and `advise` take them.
#[derive(Debug, Clone, clap::Args)]
pub struct StartArg {
    /// Start from the kernel's estimates as the scenario gives them (INIT_BW,
    /// 100 MiB/s, where it gives none: a device the kernel has just met) instead
    /// of the steady state the scenario's writers reach
    #[arg(long, conflicts_with = "live")]
    pub from_boot: bool,
    /// Start from this machine's live write-back state for the device holding
    /// DIR, read just before the simulation (root: the kernel's estimates are
    /// traced around a one-page probe written in a scratch folder under DIR);
    /// what the kernel does not show comes from the steady state
    #[arg(long, value_name = "DIR")]
    pub live: Option<PathBuf>,
    /// The machine profile (`oslab sim calibrate`) for what the scenario leaves to
    /// the machine [default: the stored one, if any]
    #[arg(long, value_name = "FILE", conflicts_with = "no_profile")]
    pub profile: Option<PathBuf>,
    /// Use no machine profile: the scenario's own values and the simulator's
    /// defaults
    #[arg(long)]
    pub no_profile: bool,
}

/// The largest profile file read.
const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// The profile asked for (or the stored one) and its path; None without one.
fn profile(start: &StartArg) -> Result<Option<(MachineProfile, PathBuf)>, Failure> {
    if start.no_profile {
        return Ok(None);
    }
    let path = match &start.profile {
        Some(p) => p.clone(),
        None => match super::calibrate::default_path() {
            Some(p) if p.symlink_metadata().is_ok() => p,
            _ => return Ok(None),
        },
    };
    let text = infile::read_text(&path, MAX_PROFILE_BYTES)?;
    let p: MachineProfile = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "the machine profile {} is not one (`oslab sim calibrate` writes them): {e}",
            path.display()
        ))
    })?;
    if p.version != PROFILE_VERSION {
        return Err(Failure::usage(format!(
            "the machine profile {} has layout version {}, this oslab reads {PROFILE_VERSION}: run `oslab sim calibrate` again",
            path.display(),
            p.version
        )));
    }
    Ok(Some((p, path)))
}

/// The scenario's configuration with `--set NAME=VALUE` applied, each value
/// parsed against the simulator's declared settings (`oslab_wbsim::settings`),
/// on the machine profile for what the scenario leaves open, starting where
/// `start` says; and the machine it describes, in words.
pub fn configured(
    s: &Scenario,
    raw: &[String],
    start: &StartArg,
) -> Result<(Config, String), Failure> {
    let mut base = s.config.clone();
    let mut machine = None;
    if s.open.any()
        && let Some((p, path)) = profile(start)?
    {
        base = p.apply(&base, s.open);
        oslab_wbsim::scenario::validate(&base).map_err(|e| {
            Failure::usage(format!(
                "the machine profile {} gives {s_name} a value it cannot take: {e}",
                path.display(),
                s_name = s.name
            ))
        })?;
        machine = Some(p.describe(&path.display().to_string()));
    }
    let mut c = sets::parse_sets(raw)
        .and_then(|assigned| sets::configure(&base, &assigned))
        .map_err(|e| Failure::usage(format!("--set {e}")))?;
    if start.from_boot {
        c.start = oslab_wbsim::config::Start::Given;
    }
    let own = oslab_lab::sim::scenario::machine_description(&c);
    let machine = match machine {
        Some(m) => format!(
            "{m}, with {}",
            own.trim_start_matches("the scenario's machine ")
        ),
        None => own,
    };
    let machine = match &start.live {
        None => machine,
        Some(dir) => format!("{machine}; {}", live_start(&mut c, dir)),
    };
    Ok((c, machine))
}

/// Starts `c` from the live state of the device holding `dir`, and says so; or
/// says why it could not be read (without root, say) and leaves the start as
/// it was.
fn live_start(c: &mut Config, dir: &Path) -> String {
    use oslab_lab::sim::live;
    match live::read(dir) {
        Ok(state) => {
            let read = state.initial();
            c.initial.write_bw_bytes_s = read.write_bw_bytes_s;
            c.initial.avg_write_bw_bytes_s = read.avg_write_bw_bytes_s;
            c.initial.dirty_ratelimit_bytes_s = read.dirty_ratelimit_bytes_s;
            c.start = oslab_wbsim::config::Start::Live;
            state.describe()
        }
        Err(why) => live::refused(&why),
    }
}

/// `--policy`'s value parser: clap names the option and the value before the
/// error.
pub fn policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s).ok_or_else(|| "unknown policy (use vanilla, wcall or wcall-fair)".to_string())
}

/// The run settings of a simulation: nothing of this machine's.
pub fn config() -> RunConfig {
    RunConfig {
        mode: Mode::Full,
        repeat: None,
        seed: 1,
        scratch_dir: std::env::temp_dir(),
        sets: Default::default(),
        oslab_exe: oslab_sys::program::own_exe(),
    }
}

/// The values of `--vary`: a list, or a range split into `steps` points.
pub fn values(vary: &str, steps: u64) -> Result<(String, Vec<String>), Failure> {
    let (key, spec) = vary.split_once('=').ok_or_else(|| {
        Failure::usage(format!("--vary {vary}: expected KEY=V1,V2 or KEY=FROM..TO"))
    })?;
    if let Some((a, b)) = spec.split_once("..") {
        let (lo, hi) = match (parse_bytes(a), parse_bytes(b)) {
            (Some(lo), Some(hi)) if hi > lo => (lo as f64, hi as f64),
            _ => {
                return Err(Failure::usage(format!(
                    "--vary {vary}: FROM..TO must be two numbers, FROM below TO"
                )));
            }
        };
        let (unit, per_unit) = unit_of(a);
        let v = (0..steps)
            .map(|i| {
                let bytes = (lo + (hi - lo) * i as f64 / (steps - 1) as f64).round();
                in_unit(bytes / per_unit, unit)
            })
            .collect();
        Ok((key.to_string(), v))
    } else {
        Ok((
            key.to_string(),
            spec.split(',').map(|x| x.trim().to_string()).collect(),
        ))
    }
}

/// The unit FROM was given in (`MiB/s` of `10MiB/s`, nothing of `4096`) and its
/// bytes, so a range's points read as its ends were typed.
fn unit_of(from: &str) -> (&str, f64) {
    let t = from.trim();
    let unit = t
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
        .trim();
    match parse_bytes(&format!("1{unit}")) {
        Some(b) if !unit.is_empty() => (unit, b as f64),
        _ => ("", 1.0),
    }
}

/// `value` of `unit` as a setting's text: at most two decimals, none when whole.
fn in_unit(value: f64, unit: &str) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_file_s_result_is_named_after_its_stem_alone() {
        for (path, name) in [
            ("/tmp/x/cell.toml", "cell"),
            ("cell.toml", "cell"),
            ("../a b/fast.disk.toml", "fast-disk"),
            ("/tmp/x/../y/é.toml", "-"),
            ("-", "stdin"),
            ("/tmp/x/.toml", "-toml"),
            ("/", "scenario"),
        ] {
            assert_eq!(result_name(Path::new(path)), name, "{path}");
        }
    }

    #[test]
    fn a_range_s_points_keep_the_unit_its_ends_were_given_in() {
        let (key, v) = values("bandwidth=10MiB/s..80MiB/s", 8).unwrap();
        assert_eq!(key, "bandwidth");
        assert_eq!(v.first().map(String::as_str), Some("10MiB/s"));
        assert_eq!(v.get(1).map(String::as_str), Some("20MiB/s"));
        assert_eq!(v.last().map(String::as_str), Some("80MiB/s"));
        let (_, v) = values("dirty_bytes=16MiB..17MiB", 3).unwrap();
        assert_eq!(v, ["16MiB", "16.5MiB", "17MiB"]);
        let (_, v) = values("writers=1..4", 4).unwrap();
        assert_eq!(v, ["1", "2", "3", "4"]);
        for (text, bytes) in [("10MiB/s", 10 << 20), ("16.5MiB", 33 << 19)] {
            let (unit, per) = unit_of(text);
            assert_eq!(parse_bytes(&in_unit(bytes as f64 / per, unit)), Some(bytes));
        }
    }
}
