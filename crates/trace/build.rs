//! Compiles the eBPF programs in src/bpf into skeletons (libbpf-cargo), when the
//! `bpf` feature is on and clang is there; otherwise the crate is built without
//! them and says so at run time ("kernel tracing: not available ...").

use std::env;
use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: [&str; 2] = ["writeback", "sched"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(oslab_bpf)");
    println!("cargo::rerun-if-changed=src/bpf");
    println!("cargo::rerun-if-env-changed=CLANG");
    if env::var_os("CARGO_FEATURE_BPF").is_none() {
        return;
    }
    build();
}

#[cfg(feature = "bpf")]
fn build() {
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let found = Command::new(&clang).arg("--version").output();
    if !found.is_ok_and(|o| o.status.success()) {
        println!(
            "cargo::warning=clang not found: oslab is built without kernel tracing (install clang, e.g. `apt install clang`, and rebuild)"
        );
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("-I/usr/include/{arch}-linux-gnu");
    for name in PROGRAMS {
        let src = format!("src/bpf/{name}.bpf.c");
        let skel = out.join(format!("{name}.skel.rs"));
        if let Err(e) = libbpf_cargo::SkeletonBuilder::new()
            .source(&src)
            .clang(&clang)
            .clang_args([multiarch.as_str(), "-Wall", "-Werror"])
            .build_and_generate(&skel)
        {
            panic!("building the eBPF program {src} failed: {e:#}");
        }
    }
    println!("cargo::rustc-cfg=oslab_bpf");
}

#[cfg(not(feature = "bpf"))]
fn build() {}
