//! A path the user named, resolved the way the kernel would, except that a
//! symbolic link is followed only when root or this user owns it: a link another
//! user planted (in /tmp, with fs.protected_symlinks = 0) is refused by name.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::{OutputError, plain};
use crate::owned::who;
use crate::tempname::euid;

/// Links followed before a path is taken for a loop, as the kernel's ELOOP.
const MAX_LINKS: usize = 40;

/// What a path names once its links are followed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A descriptor this process holds, named through /proc/self/fd (which
    /// /dev/stdout, /dev/stderr and /dev/fd/N lead to).
    Descriptor(RawFd),
    /// `existing`, an absolute path without links, then `missing`, the names
    /// at the end that do not exist yet.
    Path {
        existing: PathBuf,
        missing: Vec<OsString>,
    },
}

/// Follows `path`, link by link, refusing a link that neither root nor this user owns.
pub(crate) fn resolve(path: &Path) -> Result<Resolved, OutputError> {
    let me = euid();
    let mut done = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().map_err(|e| {
            OutputError(format!("the current folder cannot be found: {}", plain(&e)))
        })?
    };
    let mut todo = names(path);
    let mut missing = Vec::new();
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        if !missing.is_empty() {
            if name == ".." {
                return Err(no_folder(&done, &missing));
            }
            missing.push(name);
            continue;
        }
        if name == ".." {
            done.pop();
            continue;
        }
        if todo.is_empty()
            && let Some(fd) = own_descriptor(&done, &name)
        {
            return Ok(Resolved::Descriptor(fd));
        }
        let at = done.join(&name);
        match std::fs::symlink_metadata(&at) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing.push(name),
            Err(e) => {
                return Err(OutputError(format!(
                    "{} cannot be read: {}",
                    at.display(),
                    plain(&e)
                )));
            }
            Ok(m) if m.file_type().is_symlink() => {
                trusted_link(&at, m.uid(), me)?;
                links += 1;
                if links > MAX_LINKS {
                    return Err(OutputError(format!(
                        "more than {MAX_LINKS} symbolic links lead from {}",
                        path.display()
                    )));
                }
                let target = std::fs::read_link(&at).map_err(|e| {
                    OutputError(format!("{} cannot be read: {}", at.display(), plain(&e)))
                })?;
                if target.is_absolute() {
                    done = PathBuf::from("/");
                }
                for n in names(&target).into_iter().rev() {
                    todo.push_front(n);
                }
            }
            Ok(m) => {
                if !todo.is_empty() && !m.is_dir() {
                    return Err(OutputError(format!("{} is not a folder", at.display())));
                }
                done = at;
            }
        }
    }
    Ok(Resolved::Path {
        existing: done,
        missing,
    })
}

/// The names a path walks through, `..` kept (`.` and `/` are no step).
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// The one name missing at the end of a resolved path, if any: a path whose
/// folder is missing too is refused (nothing makes folders for an output).
pub(crate) fn last_missing(
    existing: &Path,
    missing: &[OsString],
) -> Result<Option<PathBuf>, OutputError> {
    match missing {
        [] => Ok(None),
        [name] => Ok(Some(existing.join(name))),
        [.., _] => Err(no_folder(existing, &missing[..missing.len() - 1])),
    }
}

fn no_folder(existing: &Path, missing: &[OsString]) -> OutputError {
    let mut dir = existing.to_path_buf();
    dir.extend(missing);
    OutputError(format!("directory {} does not exist", dir.display()))
}

fn trusted_link(at: &Path, owner: u32, me: u32) -> Result<(), OutputError> {
    if owner == 0 || owner == me {
        return Ok(());
    }
    let rule = if me == 0 {
        "oslab, running as root, follows only links owned by root".to_string()
    } else {
        format!("oslab follows only links owned by root or by {}", who(me))
    };
    Err(OutputError(format!(
        "{} is a symbolic link owned by {}, and {rule}",
        at.display(),
        who(owner)
    )))
}

/// The descriptor `dir/name` stands for when `dir` is this process's own fd
/// folder (/proc/PID/fd, or a thread's /proc/PID/task/TID/fd).
fn own_descriptor(dir: &Path, name: &OsStr) -> Option<RawFd> {
    let fd: RawFd = name.to_str()?.parse().ok()?;
    let pid = PathBuf::from(format!("/proc/{}", std::process::id()));
    let rest = dir.strip_prefix(&pid).ok()?;
    let parts: Vec<_> = rest.components().collect();
    let fd_folder = match parts.as_slice() {
        [Component::Normal(f)] => *f == "fd",
        [
            Component::Normal(t),
            Component::Normal(_),
            Component::Normal(f),
        ] => *t == "task" && *f == "fd",
        _ => false,
    };
    fd_folder.then_some(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(existing: &Path, missing: &[&str]) -> Resolved {
        Resolved::Path {
            existing: existing.to_path_buf(),
            missing: missing.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn standard_output_and_fd_links_are_this_process_descriptors() {
        assert_eq!(
            resolve(Path::new("/proc/self/fd/1")),
            Ok(Resolved::Descriptor(1))
        );
        if Path::new("/dev/fd").exists() {
            assert_eq!(resolve(Path::new("/dev/fd/2")), Ok(Resolved::Descriptor(2)));
        }
        if Path::new("/dev/stdout").exists() {
            assert_eq!(
                resolve(Path::new("/dev/stdout")),
                Ok(Resolved::Descriptor(1))
            );
        }
    }

    #[test]
    fn own_links_are_followed_and_missing_names_kept() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", real.join("l")).unwrap();
        assert_eq!(
            resolve(&real.join("l/x.json")),
            Ok(path(&real.join("sub"), &["x.json"]))
        );
        assert_eq!(
            resolve(&real.join("sub/../l")),
            Ok(path(&real.join("sub"), &[]))
        );
        let Resolved::Path { existing, missing } = resolve(&real.join("no/such/x.json")).unwrap()
        else {
            panic!("not a path");
        };
        let e = last_missing(&existing, &missing).unwrap_err();
        assert!(e.0.contains("no/such does not exist"), "{e}");
        std::os::unix::fs::symlink("loop", real.join("loop")).unwrap();
        let e = resolve(&real.join("loop")).unwrap_err();
        assert!(e.0.contains("symbolic links"), "{e}");
    }

    #[test]
    fn only_root_and_the_caller_are_trusted_link_owners() {
        assert!(trusted_link(Path::new("/l"), 0, 1000).is_ok());
        assert!(trusted_link(Path::new("/l"), 1000, 1000).is_ok());
        let e = trusted_link(Path::new("/tmp/l"), 1001, 0).unwrap_err();
        assert!(
            e.0.contains("/tmp/l is a symbolic link owned by uid 1001"),
            "{e}"
        );
        assert!(e.0.contains("only links owned by root"), "{e}");
        let e = trusted_link(Path::new("/tmp/l"), 1001, 1000).unwrap_err();
        assert!(e.0.contains("root or by uid 1000"), "{e}");
    }
}
