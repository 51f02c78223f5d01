//! Reading a file a user names (`oslab judge FILE`, `report`, `compare`, `import`,
//! a scenario file): `-` for standard input, else a regular file, never more than
//! a limit of bytes, compressed or not.
//!
//! oslab runs as root and the path comes from outside: a device (/dev/zero, a tape,
//! /dev/watchdog, whose opening alone has effects), a FIFO or a folder is refused
//! without being opened. The path is reached name by name with O_PATH, which
//! opens nothing of what it names, following only links of root's or the
//! caller's (a link another user planted could lead root to /etc/shadow, whose
//! lines would surface in messages or imported rows); a file of the kernel's
//! interfaces (procfs, sysfs, debugfs, tracefs, cgroupfs and their like) is
//! refused; only the regular file that handle shows is opened for reading,
//! through /proc/self/fd, so a path swapped for a device between the check and
//! the open is never opened. Reads stop one byte past the limit, from a
//! file that grows meanwhile and from standard input alike, and a gzip stream is
//! decompressed under the same limit (a small bomb cannot fill memory).

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use oslab_units::human_bytes;

use crate::chase::{self, LastLink, Reached};

/// The default limit on an input file, decompressed or not (`--max-input`).
pub const DEFAULT_MAX_INPUT: u64 = 1 << 30;

/// The UTF-8 byte-order mark some editors put at the start of a text file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Standard input is read at most once per process.
static STDIN_TAKEN: AtomicBool = AtomicBool::new(false);

/// Why an input was not read: one sentence that names it.
#[derive(Debug)]
pub struct InputError {
    pub name: String,
    pub why: String,
    /// A failure of the system while reading (exit 1), not a wrong input (exit 2).
    pub at_run_time: bool,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.why)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// The input `name` is not what it should be (a usage error).
    pub fn wrong(name: &str, why: impl Into<String>) -> InputError {
        InputError {
            name: name.to_string(),
            why: why.into(),
            at_run_time: false,
        }
    }
}

fn wrong(name: &str, why: impl Into<String>) -> InputError {
    InputError::wrong(name, why)
}

/// How a path is named to the user: `-` is standard input.
pub fn display_name(path: &Path) -> String {
    if is_stdin(path) {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn too_large(name: &str, max: u64) -> InputError {
    wrong(
        name,
        format!(
            "holds more than {}, the limit on an input (--max-input raises it)",
            human_bytes(max)
        ),
    )
}

/// What a file that is not regular is, for the refusal.
fn kind_of(kind: libc::mode_t) -> &'static str {
    match kind {
        libc::S_IFDIR => "a folder",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        _ => "not a regular file",
    }
}

fn kind_of_type(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = if t.is_dir() {
        libc::S_IFDIR
    } else if t.is_char_device() {
        libc::S_IFCHR
    } else if t.is_block_device() {
        libc::S_IFBLK
    } else if t.is_fifo() {
        libc::S_IFIFO
    } else if t.is_socket() {
        libc::S_IFSOCK
    } else {
        0
    };
    kind_of(kind)
}

fn open_error(name: &str, e: std::io::Error) -> InputError {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".to_string(),
        std::io::ErrorKind::PermissionDenied => "cannot be read: permission denied".to_string(),
        _ => format!("cannot be opened: {e}"),
    };
    wrong(name, why)
}

/// File systems whose files are the kernel's interfaces, not data: refused as
/// inputs, whatever leads there (a size-0 /proc or /sys file passes for a
/// regular file, and reading /proc/self/pagemap would fill memory).
const KERNEL_INTERFACES: [(i64, &str); 9] = [
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x0027_e0eb, "cgroupfs"),
    (0x6367_7270, "cgroupfs"),
    (0x7363_6673, "securityfs"),
    (0x6265_6570, "configfs"),
    (0xcafe_4a11, "bpffs"),
];

/// Opens `path` for reading when it is a regular file of at most `max` bytes,
/// without opening anything else it may name: reached name by name
/// ([`crate::chase`]: a link is followed only when root or the caller owns it),
/// looked at through an O_PATH handle, and opened for reading through that
/// handle, so what was checked is what is read.
pub fn open_regular(path: &Path, max: u64) -> Result<File, InputError> {
    let name = path.display().to_string();
    let reached = chase::reach(path, &chase::trusted_owners(), LastLink::Follow)
        .map_err(|e| wrong(&name, format!("cannot be read: {e}")))?;
    let item = match reached {
        Reached::Found { item, .. } => item,
        Reached::Folder(_) => return Err(not_regular(&name, "a folder")),
        Reached::Missing { .. } => return Err(wrong(&name, "does not exist")),
        Reached::Descriptor(fd) => return descriptor(&name, fd, max),
    };
    let kind = chase::kind(&item.st);
    if kind != libc::S_IFREG {
        return Err(not_regular(&name, kind_of(kind)));
    }
    if let Ok(magic) = chase::fs_magic(item.fd.as_raw_fd())
        && let Some((_, fs)) = KERNEL_INTERFACES.iter().find(|(m, _)| *m == magic)
    {
        return Err(wrong(
            &name,
            format!("is a file of the kernel's {fs}, not a file of data"),
        ));
    }
    if item.st.st_size as u64 > max {
        return Err(too_large(&name, max));
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(item.proc_path())
        .map_err(|e| open_error(&name, e))
}

fn not_regular(name: &str, what: &str) -> InputError {
    wrong(
        name,
        format!("is {what}, not a regular file (give a file, or - for standard input)"),
    )
}

/// An input named as one of this process's descriptors (/dev/stdin): read when
/// it is a regular file, like any other input.
fn descriptor(name: &str, fd: std::os::fd::RawFd, max: u64) -> Result<File, InputError> {
    let path = format!("/proc/self/fd/{fd}");
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| open_error(name, e))?;
    let meta = f.metadata().map_err(|e| open_error(name, e))?;
    if !meta.file_type().is_file() {
        return Err(not_regular(name, kind_of_type(meta.file_type())));
    }
    if meta.len() > max {
        return Err(too_large(name, max));
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", f.as_raw_fd()))
        .map_err(|e| open_error(name, e))
}

/// Reads all of `from`, or refuses it when it holds more than `max` bytes.
fn read_at_most(mut from: impl Read, name: &str, max: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    from.by_ref()
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| InputError {
            name: name.to_string(),
            why: format!("could not be read: {e}"),
            at_run_time: true,
        })?;
    if bytes.len() as u64 > max {
        return Err(too_large(name, max));
    }
    Ok(bytes)
}

/// The bytes of `path` (`-`: standard input), at most `max` of them.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, InputError> {
    if is_stdin(path) {
        if STDIN_TAKEN.swap(true, Ordering::SeqCst) {
            return Err(wrong(
                "standard input",
                "was named twice (- can stand for one input only)",
            ));
        }
        return read_at_most(std::io::stdin().lock(), "standard input", max);
    }
    let name = path.display().to_string();
    read_at_most(open_regular(path, max)?, &name, max)
}

/// Whether `bytes` begin as a gzip stream.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// `bytes` decompressed when they are a gzip stream (at most `max` bytes of
/// output), else as they are.
pub fn maybe_gunzip(bytes: Vec<u8>, name: &str, max: u64) -> Result<Vec<u8>, InputError> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| wrong(name, format!("is not a readable gzip file: {e}")))?;
    if out.len() as u64 > max {
        return Err(wrong(
            name,
            format!(
                "decompresses to more than {}, the limit on an input (--max-input raises it)",
                human_bytes(max)
            ),
        ));
    }
    Ok(out)
}

/// `bytes` without a UTF-8 byte-order mark at the start, if they have one.
pub fn skip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// The text of `path` (`-`: standard input): at most `max` bytes of UTF-8, a
/// byte-order mark at the start skipped.
pub fn read_text(path: &Path, max: u64) -> Result<String, InputError> {
    let name = display_name(path);
    let bytes = read_bounded(path, max)?;
    let text = skip_bom(&bytes);
    std::str::from_utf8(text).map(str::to_string).map_err(|e| {
        wrong(
            &name,
            format!("is not UTF-8 text (at byte {})", e.valid_up_to()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<Vec<u8>, InputError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn a_regular_file_reads_whole_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_bounded(&p, 10).unwrap(), b"0123456789");
        let e = err(read_bounded(&p, 9));
        assert!(e.contains("holds more than 9 B"), "{e}");
        assert!(e.contains("--max-input"), "{e}");
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_unopened() {
        let e = err(read_bounded(Path::new("/dev/zero"), 1 << 20));
        assert_eq!(
            e,
            "/dev/zero is a character device, not a regular file (give a file, or - for standard input)"
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(err(read_bounded(dir.path(), 1 << 20)).contains("is a folder"));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // no writer: opening it for reading would block; it is refused at once
        assert!(err(read_bounded(&fifo, 1 << 20)).contains("is a FIFO"));
    }

    #[test]
    fn a_link_to_a_device_is_refused_and_a_link_to_a_file_read() {
        let dir = tempfile::tempdir().unwrap();
        let to_dev = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &to_dev).unwrap();
        assert!(err(read_bounded(&to_dev, 100)).contains("a character device"));
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let to_file = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &to_file).unwrap();
        assert_eq!(read_bounded(&to_file, 100).unwrap(), b"x");
    }

    #[test]
    fn files_of_the_kernels_interfaces_are_no_input_whatever_leads_there() {
        let e = err(read_bounded(Path::new("/proc/self/status"), 1 << 20));
        assert!(
            e.ends_with("is a file of the kernel's procfs, not a file of data"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("x.raw.json");
        std::os::unix::fs::symlink("/proc/self/pagemap", &link).unwrap();
        assert!(err(read_bounded(&link, 1 << 20)).contains("procfs"));
        let sys = Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
        if sys.exists() {
            assert!(err(read_bounded(sys, 1 << 20)).contains("sysfs"));
        }
    }

    #[test]
    fn a_link_of_another_user_is_not_followed() {
        if !crate::process::is_root() {
            eprintln!("skipped: needs root to make a link owned by another uid");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root:x:0").unwrap();
        let link = dir.path().join("in.json");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let c = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; lchown has no memory effects.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), 4242, 4242) }, 0);
        let e = err(read_bounded(&link, 1 << 20));
        assert!(e.contains("is a symbolic link owned by uid 4242"), "{e}");
        assert!(!e.contains("root:x"), "{e}");
    }

    #[test]
    fn missing_files_are_named() {
        assert_eq!(
            err(read_bounded(Path::new("/nonexistent/x.json"), 100)),
            "/nonexistent/x.json does not exist"
        );
    }

    #[test]
    fn gzip_is_decompressed_under_the_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b'a'; 1 << 20]).unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 4096);
        let whole = maybe_gunzip(bomb.clone(), "x.gz", 1 << 20).unwrap();
        assert_eq!(whole.len(), 1 << 20);
        let e = maybe_gunzip(bomb, "x.gz", (1 << 20) - 1).unwrap_err();
        assert!(
            e.to_string().starts_with("x.gz decompresses to more than"),
            "{e}"
        );
        assert_eq!(maybe_gunzip(b"plain".to_vec(), "p", 10).unwrap(), b"plain");
        let e = maybe_gunzip(vec![0x1f, 0x8b, 1, 2], "t.gz", 10).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.gz is not a readable gzip file"),
            "{e}"
        );
    }

    #[test]
    fn text_skips_a_byte_order_mark_and_must_be_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, b"\xEF\xBB\xBF{\"a\": 1}").unwrap();
        assert_eq!(read_text(&p, 100).unwrap(), "{\"a\": 1}");
        std::fs::write(&p, b"ab\xFFcd").unwrap();
        let e = read_text(&p, 100).unwrap_err().to_string();
        assert!(e.ends_with("is not UTF-8 text (at byte 2)"), "{e}");
        assert_eq!(skip_bom(b"\xEF\xBBx"), b"\xEF\xBBx");
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        // an endless reader (as /dev/zero on standard input) costs max + 1 bytes
        let e = read_at_most(std::io::repeat(0), "standard input", 1000).unwrap_err();
        assert!(e.to_string().starts_with("standard input holds more than"));
        assert!(!e.at_run_time);
    }
}
