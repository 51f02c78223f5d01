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
    let sets = oslab_harness::sets::parse(&args(&[" rate = 8MiB"]), &exps).unwrap();
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

#[test]
fn the_testbed_cap_is_one_rate_setting_with_each_experiments_default() {
    let reg = Registry::default();
    let ids = ["wb.cases", "wb.throttle", "wb.wcall", "wb.database"];
    let exps = reg
        .resolve(&ids.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .unwrap();
    let sets = oslab_harness::sets::parse(&args(&["bandwidth=40MiB/s"]), &exps).unwrap();
    assert_eq!(
        sets.len(),
        ids.len(),
        "every experiment that builds a testbed"
    );
    let refused = oslab_harness::sets::parse(&args(&["bandwidth=40MiB"]), &exps).unwrap_err();
    assert!(refused.contains("not a rate"), "{refused}");
    let mut defaults = Vec::new();
    for e in &exps {
        let cap = e
            .settings()
            .iter()
            .find(|s| s.name() == "bandwidth")
            .expect("declares the cap");
        assert_eq!(cap.kind_label(), "bytes/s", "{}", e.meta().id);
        assert_eq!(cap.range().as_deref(), Some("1 MiB/s to 10 GiB/s"));
        defaults.push(cap.defaults().0);
    }
    assert_eq!(defaults, ["20 MiB/s", "10 MiB/s", "40 MiB/s", "40 MiB/s"]);
}
