//! Compiles wb.wcall's paced writer (src/wb/wcall/paced_writer.c) with the C
//! compiler (`$CC`, else `cc`) into OUT_DIR, so the binary carries it and a run
//! needs no compiler on the machine. The writer stays a C program, one oslab's
//! Rust did not write, on purpose. Without a compiler the crate builds without
//! it (cfg `oslab_paced_writer` off) and wb.wcall says at run time that it is
//! not testable and why.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "src/wb/wcall/paced_writer.c";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(oslab_paced_writer)");
    println!("cargo::rerun-if-changed={SOURCE}");
    println!("cargo::rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        println!(
            "cargo::warning=cross-compiling: oslab is built without wb.wcall's paced writer (the C compiler builds for this machine)"
        );
        return;
    }
    let built = Command::new(&compiler)
        // warnings are not fatal: a newer compiler's new warning must not
        // stop a user's build
        .args(["-O2", "-Wall", "-o"])
        .arg(out.join("paced_writer"))
        .arg(SOURCE)
        .output();
    match built {
        Ok(o) if o.status.success() => println!("cargo::rustc-cfg=oslab_paced_writer"),
        Ok(o) => panic!(
            "{compiler} could not build {SOURCE}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => println!(
            "cargo::warning=no C compiler ({compiler}: {e}): oslab is built without wb.wcall's paced writer (install gcc and libc6-dev, and rebuild)"
        ),
    }
}
