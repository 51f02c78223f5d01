//! Builds the interposer (crates/wcall-preload, a cdylib) into this crate's
//! OUT_DIR, so `embedded` can carry its bytes inside every binary that links
//! the governor: a copy of `oslab` alone, wherever it is put, can still govern.
//! Cargo cannot depend on another package's cdylib (artifact dependencies are
//! unstable), so a nested cargo builds it, in a target folder of its own (the
//! outer build holds the lock on the usual one), with the same profile.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let workspace = manifest.join("../..");
    for dir in ["crates/wcall-preload", "crates/wcall-table"] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    for file in ["Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(file).display());
    }
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    // the library is loaded into programs of the target, not of the build host
    let triple = std::env::var("TARGET").expect("cargo sets TARGET");
    let target = out.join("interposer");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args([
            "build",
            "--quiet",
            "--locked",
            "-p",
            "oslab-wcall-preload",
            "--lib",
        ])
        .args(["--target", &triple])
        .arg("--target-dir")
        .arg(&target)
        // a build-dir in the outer build's configuration would be locked by it
        .env("CARGO_BUILD_BUILD_DIR", &target);
    if release {
        cmd.arg("--release");
    }
    // what the outer cargo tells this script about its own package, its job
    // server and clippy is not for the inner build (the same compiler and flags
    // are: RUSTC and CARGO_ENCODED_RUSTFLAGS stay)
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        let own = [
            "CARGO_PKG_",
            "CARGO_CFG_",
            "CARGO_FEATURE_",
            "CARGO_MANIFEST_",
        ]
        .iter()
        .any(|p| key.starts_with(p));
        let inherited = [
            "CARGO_MAKEFLAGS",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_DIR",
            "RUSTC_WORKSPACE_WRAPPER",
        ];
        if own || inherited.contains(&key.as_str()) {
            cmd.env_remove(key);
        }
    }
    let status = cmd
        .status()
        .expect("cannot run cargo to build the interposer");
    assert!(
        status.success(),
        "building the interposer (oslab-wcall-preload) failed"
    );
    let built = target
        .join(&triple)
        .join(if release { "release" } else { "debug" })
        .join("liboslab_wcall.so");
    std::fs::copy(&built, out.join("liboslab_wcall.so"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
}
