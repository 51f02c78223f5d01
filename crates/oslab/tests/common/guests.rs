//! Debian's kernels booted under QEMU with the host's userspace read-only over 9p
//! (scripts/kernel-matrix/): what the kernel matrix and the systemd guest share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// scripts/kernel-matrix: prepare, boot and the guests' common pieces.
pub fn scripts() -> PathBuf {
    repo().join("scripts/kernel-matrix")
}

/// Why a guest cannot be booted here, or None when it can: the same gate for
/// every guest (OSLAB_KERNEL_MATRIX=off turns them all off).
pub fn skip_reason() -> Option<String> {
    if std::env::var("OSLAB_KERNEL_MATRIX").as_deref() == Ok("off") {
        return Some("OSLAB_KERNEL_MATRIX=off".into());
    }
    if !super::is_root() {
        return Some("a guest needs root (9p export of /, loop devices in the guest)".into());
    }
    if let Some(why) = missing_tool() {
        return Some(format!(
            "{why} (.ci/run installs the kernel matrix's tools)"
        ));
    }
    if !busybox_is_static() {
        return Some("busybox is not the static one (Debian's busybox-static)".into());
    }
    None
}

/// `program` on PATH (or in /usr/sbin, which a non-login PATH may lack).
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
        .or_else(|| Some(Path::new("/usr/sbin").join(program)).filter(|p| p.is_file()))
}

/// Whether `busybox` is a static program (the initramfs has no libraries).
fn busybox_is_static() -> bool {
    Command::new("busybox")
        .args(["sh", "-c", "true"])
        .output()
        .is_ok()
        && Command::new("ldd")
            .arg(on_path("busybox").unwrap_or_default())
            .output()
            .is_ok_and(|o| {
                !o.status.success() || String::from_utf8_lossy(&o.stdout).contains("not a dynamic")
            })
}

fn missing_tool() -> Option<String> {
    [
        "qemu-system-x86_64",
        "busybox",
        "depmod",
        "apt-get",
        "dpkg-deb",
    ]
    .into_iter()
    .find(|tool| on_path(tool).is_none())
    .map(|tool| format!("{tool} is not installed"))
}

/// A kernel prepare made bootable: its package, the version and its release.
pub struct Prepared {
    pub package: String,
    pub version: String,
    pub release: String,
}

/// Fetches and unpacks `packages` into `cache` (scripts/kernel-matrix/prepare);
/// the reason when they cannot be (a machine without Debian's archive).
pub fn prepare(cache: &Path, packages: &[&str]) -> Result<Vec<Prepared>, String> {
    let out = Command::new(scripts().join("prepare"))
        .arg(cache)
        .args(packages)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let lines = String::from_utf8(out.stdout).unwrap();
    Ok(lines
        .lines()
        .map(|line| {
            let w: Vec<&str> = line.split_whitespace().collect();
            let [package, version, release] = w[..] else {
                panic!("prepare printed '{line}'");
            };
            Prepared {
                package: package.into(),
                version: version.into(),
                release: release.into(),
            }
        })
        .collect())
}

/// Boots `kernel` with `job` (scripts/kernel-matrix/boot), the guest's results in
/// `out`; `guest` hands the guest to another script than the matrix's own.
/// Fails the test when the kernel panicked or the guest did not end with 0.
/// Returns the seconds from boot to power-off.
pub fn boot(kernel: &Path, out: &Path, job: &Path, limit_s: u32, guest: Option<&Path>) -> f64 {
    let release = kernel.file_name().unwrap().to_string_lossy().into_owned();
    let mut cmd = Command::new(scripts().join("boot"));
    cmd.arg(kernel).arg(out).arg(job).arg(limit_s.to_string());
    if let Some(g) = guest {
        cmd.env("KMX_GUEST", g);
    }
    let t0 = std::time::Instant::now();
    let status = cmd.status().unwrap();
    let wall_s = t0.elapsed().as_secs_f64();
    let console = text(out, "console.log");
    assert!(
        !console.contains("Kernel panic"),
        "{release}: the guest kernel panicked: {}",
        console
            .lines()
            .find(|l| l.contains("Oops") || l.contains("BUG"))
            .unwrap_or("see the console log")
    );
    assert!(
        status.success(),
        "{release}: the guest ended with {status} (console: {}, guest log: {})",
        out.join("console.log").display(),
        out.join("guest.log").display()
    );
    wall_s
}

/// The guest job's "NAME RC SECONDS" lines (scripts/kernel-matrix/checks).
pub fn checks(out: &Path) -> Vec<(String, i32, f64)> {
    text(out, "checks")
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.to_string(),
                w.next()?.parse().ok()?,
                w.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// A file the guest left in `out`, empty when it left none.
pub fn text(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_default()
}
