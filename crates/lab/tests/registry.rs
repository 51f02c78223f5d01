//! Every experiment's settings are declared once and read where they are declared:
//! planning an experiment (pure: no measuring) in quick and in full mode reads
//! exactly the settings it declares.

use std::collections::BTreeSet;
use std::path::Path;

use oslab_harness::RunConfig;
use oslab_lab::Registry;
use oslab_model::Mode;
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

fn machine() -> oslab_model::machine::MachineInfo {
    let root =
        Root::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sys/tests/fixtures/kvm-xeon-2cpu"));
    machine::collect(
        &root,
        &LiveProbes {
            cpuid_hypervisor: None,
            is_root: true,
            scratch_dir: "/tmp".into(),
            scratch_dev: None,
            scratch_free_bytes: Some(1 << 40),
            page_bytes: 4096,
        },
    )
}

fn config(mode: Mode) -> RunConfig {
    RunConfig {
        mode,
        repeat: None,
        seed: 1,
        scratch_dir: "/tmp".into(),
        sets: Default::default(),
        // planning starts no program
        oslab_exe: "/nonexistent/oslab".into(),
    }
}

#[test]
fn every_declared_setting_is_read_and_nothing_else() {
    let m = machine();
    let reg = Registry::default();
    for e in reg.all() {
        let declared: BTreeSet<&str> = e.settings().iter().map(|s| s.name()).collect();
        assert_eq!(
            declared.len(),
            e.settings().len(),
            "{}: a setting is declared twice",
            e.meta().id
        );
        let mut read = BTreeSet::new();
        for mode in [Mode::Quick, Mode::Full] {
            read.extend(e.settings_read(&config(mode), &m));
        }
        assert_eq!(read, declared, "{}: settings read vs declared", e.meta().id);
    }
}

// `oslab run --set`: parsed against the declarations of the experiments selected
fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_value_goes_to_every_selected_experiment_that_declares_it() {
    let reg = Registry::default();
    let exps = reg
        .resolve(&["wb.background".into(), "wb.periodic".into()])
        .unwrap();
    let sets = oslab_harness::sets::parse(&args(&[" rate = 8MiB/s"]), &exps).unwrap();
    let keys: Vec<_> = sets.keys().map(|(id, n)| format!("{id}/{n}")).collect();
    assert_eq!(keys, ["wb.background/rate", "wb.periodic/rate"]);
    assert_eq!(
        oslab_harness::sets::parse(&args(&["rate"]), &exps).unwrap_err(),
        "rate: expected NAME=VALUE"
    );
    assert!(
        oslab_harness::sets::parse(&args(&["nope=1"]), &exps)
            .unwrap_err()
            .starts_with("nope: no selected experiment has that setting (known: rate, ")
    );
    let null = reg.resolve(&["null".into()]).unwrap();
    assert_eq!(
        oslab_harness::sets::parse(&args(&["nope=1"]), &null).unwrap_err(),
        "nope: the selected experiments have no settings"
    );
}

/// The experiments `ids`, each declaring `name` as a rate from `range`: their
/// quick and full defaults, in order.
fn one_rate_declared_by(ids: &[&str], name: &str, range: &str) -> Vec<(String, String)> {
    let reg = Registry::default();
    let exps = reg
        .resolve(&ids.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .unwrap();
    let given = format!("{name}=40MiB/s");
    let sets = oslab_harness::sets::parse(&args(&[&given]), &exps).unwrap();
    assert_eq!(sets.len(), ids.len(), "{given} goes to each of {ids:?}");
    for set in sets.values() {
        assert_eq!(set.get::<oslab_lab::settings::Rate>(), Some(&(40 << 20)));
    }
    let mut defaults = Vec::new();
    for e in &exps {
        let setting = e
            .settings()
            .iter()
            .find(|s| s.name() == name)
            .expect("declares it");
        assert_eq!(setting.kind_label(), "bytes/s", "{}", e.meta().id);
        assert_eq!(setting.range().as_deref(), Some(range));
        defaults.push(setting.defaults());
    }
    defaults
}

/// Each default as `oslab list --settings` shows it, the same in quick and
/// full mode.
fn mib_s(each: &[u32]) -> Vec<(String, String)> {
    each.iter()
        .map(|n| (format!("{n} MiB/s"), format!("{n} MiB/s")))
        .collect()
}

#[test]
fn the_testbed_cap_is_one_rate_setting_with_each_experiments_default() {
    let ids = ["wb.cases", "wb.throttle", "wb.wcall", "wb.database"];
    let defaults = one_rate_declared_by(&ids, "bandwidth", "1 MiB/s to 10 GiB/s");
    assert_eq!(defaults, mib_s(&[20, 10, 40, 40]));
    let reg = Registry::default();
    let exps = reg.resolve(&["wb.cases".into()]).unwrap();
    let refused = oslab_harness::sets::parse(&args(&["bandwidth=40MiB"]), &exps).unwrap_err();
    assert!(refused.contains("not a rate"), "{refused}");
}

#[test]
fn the_sawtooth_writers_rate_is_one_rate_setting_with_each_experiments_default() {
    let ids = ["wb.background", "wb.periodic", "wb.cases"];
    let defaults = one_rate_declared_by(&ids, "rate", "1 MiB/s to 1 GiB/s");
    assert_eq!(defaults, mib_s(&[4, 4, 8]));
    let reg = Registry::default();
    let exps = reg
        .resolve(&["wb.background".into(), "wb.cases".into()])
        .unwrap();
    // the size users typed before the rate was a rate: refused with the rate to type
    for (given, says) in [("8MiB", "8MiB/s"), ("8 MiB", "8 MiB/s")] {
        let refused =
            oslab_harness::sets::parse(&args(&[&format!("rate={given}")]), &exps).unwrap_err();
        assert_eq!(
            refused,
            format!("rate={given}: not a rate (a size needs /s: {says})")
        );
    }
    let refused = oslab_harness::sets::parse(&args(&["rate=512KiB/s"]), &exps).unwrap_err();
    assert_eq!(
        refused,
        "rate=512KiB/s is out of range: give 1 MiB/s to 1 GiB/s"
    );
}
