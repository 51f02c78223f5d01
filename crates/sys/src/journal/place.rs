//! Where journals live, and which folders are trusted to hold them.
//!
//! Journals are kept in `$OSLAB_JOURNAL_DIR` when it is set, else in `/run/oslab`
//! for root (cleared at boot, exactly when every change a journal could undo is
//! gone too), else in `$XDG_RUNTIME_DIR/oslab`, else in `$TMPDIR/oslab-UID`. A
//! journal says "write this into that file, remove that path", so a folder that
//! another user made or can write is never read or written: it must be a real
//! folder (not a link) of the user's own that nobody else can write, below
//! folders of root's or the user's (sticky where others can write), as
//! [`crate::owned`] checks.
//!
//! When the usual folder is refused (another user made /tmp/oslab-UID first),
//! oslab says so and keeps its journals in a private folder
//! `oslab-UID-journals-HEX` in the temporary folder instead, made fresh with a
//! random name nobody can take first; `oslab restore` and the pending line look
//! in every such folder of the user's as well. An explicit `$OSLAB_JOURNAL_DIR`
//! that is refused is not replaced: nothing is read there, and the first change
//! fails.

use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use crate::owned::{Refused, check_ancestors, check_dir, ensure_dir};
use crate::process;

/// The folders of this process's journals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// Where this process's journals go (made on the first change).
    pub home: PathBuf,
    /// Every checked folder that holds journals of this user, for `restore`
    /// and the pending line.
    pub all: Vec<PathBuf>,
    /// One sentence for each folder refused, and what is done instead.
    pub refused: Vec<String>,
}

/// What decides where journals live.
#[derive(Debug, Clone)]
pub(super) struct Inputs {
    /// `$OSLAB_JOURNAL_DIR`.
    pub explicit: Option<PathBuf>,
    pub root: bool,
    /// Who must own every folder and file: the effective uid.
    pub owner: u32,
    /// The uid in folder names: the real uid.
    pub uid: u32,
    /// `$XDG_RUNTIME_DIR`.
    pub runtime: Option<PathBuf>,
    /// Where private folders are made and looked for: `$TMPDIR`, then /tmp.
    pub temps: Vec<PathBuf>,
}

impl Inputs {
    fn of_this_process() -> Inputs {
        Inputs {
            explicit: std::env::var_os("OSLAB_JOURNAL_DIR").map(PathBuf::from),
            root: process::is_root(),
            owner: process::euid(),
            uid: process::uid(),
            runtime: std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            temps: vec![std::env::temp_dir(), PathBuf::from("/tmp")],
        }
    }

    fn usual(&self) -> PathBuf {
        if self.root {
            return PathBuf::from("/run/oslab");
        }
        match &self.runtime {
            Some(d) => d.join("oslab"),
            None => self.temps[0].join(format!("oslab-{}", self.uid)),
        }
    }

    fn private_prefix(&self) -> String {
        format!("oslab-{}-journals-", self.uid)
    }
}

/// The folders of this process's journals, found once; a refusal is said once on
/// stderr.
pub fn places() -> &'static Places {
    static PLACES: OnceLock<Places> = OnceLock::new();
    PLACES.get_or_init(|| {
        let p = find(&Inputs::of_this_process());
        for sentence in &p.refused {
            eprintln!("oslab: {sentence}");
        }
        p
    })
}

/// Where this process's journals go: [`Places::home`].
pub fn journal_dir() -> PathBuf {
    places().home.clone()
}

/// The folder that holds the named journal `journal-NAME.jsonl`, if any does,
/// else where it would be made.
pub fn named_dir(name: &str) -> PathBuf {
    let file = format!("journal-{name}.jsonl");
    let p = places();
    p.all
        .iter()
        .find(|d| std::fs::symlink_metadata(d.join(&file)).is_ok())
        .unwrap_or(&p.home)
        .clone()
}

pub(super) fn find(inp: &Inputs) -> Places {
    if let Some(dir) = &inp.explicit {
        return explicit(dir, inp.owner);
    }
    let usual = inp.usual();
    let bases = trusted_bases(inp);
    let mut private: Vec<PathBuf> = bases.iter().flat_map(|b| private_folders(b, inp)).collect();
    let r = match look(&usual, inp.owner) {
        Ok(there) => {
            return Places {
                home: there.clone().unwrap_or(usual),
                all: there.into_iter().chain(private).collect(),
                refused: Vec::new(),
            };
        }
        Err(r) => r,
    };
    let home = match private.first() {
        Some(first) => Ok(first.clone()),
        None => make_private_folder(&bases, inp).inspect(|made| private.push(made.clone())),
    };
    let (home, sentence) = match home {
        Ok(home) => {
            let s = format!(
                "{}; journals go to {} instead",
                refusal(&usual, &r),
                home.display()
            );
            (home, s)
        }
        Err(why) => (
            usual.clone(),
            format!(
                "{}, and no private folder could be made instead ({why}), so no change is made",
                refusal(&usual, &r)
            ),
        ),
    };
    Places {
        home,
        all: private,
        refused: vec![sentence],
    }
}

/// `$OSLAB_JOURNAL_DIR`: used when trusted, never replaced when refused.
fn explicit(dir: &Path, owner: u32) -> Places {
    match look(dir, owner) {
        Ok(there) => Places {
            home: there.clone().unwrap_or_else(|| dir.to_path_buf()),
            all: there.into_iter().collect(),
            refused: Vec::new(),
        },
        Err(r) => Places {
            home: dir.to_path_buf(),
            all: Vec::new(),
            refused: vec![format!(
                "{}; OSLAB_JOURNAL_DIR must name a folder of your own that nobody else can write, so no journal is read there and no change is made",
                refusal(dir, &r)
            )],
        },
    }
}

/// "the journal folder X is owned by ...", or "... X is refused: Y ..." when
/// the refusal is about a folder above it.
fn refusal(dir: &Path, r: &Refused) -> String {
    if canonical(dir).as_deref() == Some(r.path.as_path()) {
        format!("the journal folder {r}")
    } else {
        format!("the journal folder {} is refused: {r}", dir.display())
    }
}

/// `dir`'s parent and last name; refused when it has no last name of its own.
fn split(dir: &Path) -> Result<(PathBuf, OsString), Refused> {
    let mut parts = dir.components();
    match parts.next_back() {
        Some(Component::Normal(name)) => {
            let parent = parts.as_path();
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            Ok((parent.to_path_buf(), name.to_os_string()))
        }
        _ => Err(Refused {
            path: dir.to_path_buf(),
            why: "names no folder of its own (it ends in '/', '.' or '..')".into(),
        }),
    }
}

/// `dir` with its parent resolved (links and all), its last name kept as it is.
fn canonical(dir: &Path) -> Option<PathBuf> {
    let (parent, name) = split(dir).ok()?;
    Some(std::fs::canonicalize(parent).ok()?.join(name))
}

/// Checks the folder `dir` for reading: Some(its path, parent resolved) when it
/// is there and trusted, None when it is not there (nothing to read).
fn look(dir: &Path, owner: u32) -> Result<Option<PathBuf>, Refused> {
    let (parent, name) = split(dir)?;
    let parent = match std::fs::canonicalize(&parent) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Refused {
                path: parent,
                why: format!("cannot be read: {e}"),
            });
        }
    };
    let dir = parent.join(name);
    check_ancestors(&dir, owner)?;
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => check_dir(&dir, owner).map(|()| Some(dir)),
    }
}

/// Makes the folder `dir` for writing a journal in it (mode 0700, folders above
/// it too when missing), then checks it and every folder above it. Returns its
/// path with the parent resolved.
pub(super) fn prepare(dir: &Path, owner: u32) -> Result<PathBuf, Refused> {
    let (parent, name) = split(dir)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&parent)
        .map_err(|e| Refused {
            path: parent.clone(),
            why: format!("cannot be made: {e}"),
        })?;
    let parent = std::fs::canonicalize(&parent).map_err(|e| Refused {
        path: parent.clone(),
        why: format!("cannot be read: {e}"),
    })?;
    let dir = parent.join(name);
    check_ancestors(&dir, owner)?;
    ensure_dir(&dir, owner, 0o700)?;
    Ok(dir)
}

/// The temporary folders fit to hold a private folder (resolved, each once): a
/// real folder whose owners and modes, and those of every folder above it, pass
/// [`check_ancestors`].
fn trusted_bases(inp: &Inputs) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    for t in &inp.temps {
        let Ok(t) = std::fs::canonicalize(t) else {
            continue;
        };
        if t.is_dir() && check_ancestors(&t.join("x"), inp.owner).is_ok() && !bases.contains(&t) {
            bases.push(t);
        }
    }
    bases
}

/// The private journal folders of this user in `base`: named
/// `oslab-UID-journals-` and 24 hexadecimal digits (`tempname::RANDOM_HEX`), and passing [`check_dir`].
fn private_folders(base: &Path, inp: &Inputs) -> Vec<PathBuf> {
    let prefix = inp.private_prefix();
    let Ok(rd) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(prefix.as_str()))
                .is_some_and(|hex| {
                    hex.len() == crate::tempname::RANDOM_HEX
                        && hex.bytes().all(|b| b.is_ascii_hexdigit())
                })
        })
        .map(|e| e.path())
        .filter(|p| check_dir(p, inp.owner).is_ok())
        .collect();
    found.sort();
    found
}

/// Makes a fresh private folder in the first trusted base: a random name, made
/// with mkdir and mode 0700 (never over a folder that is there already), checked.
fn make_private_folder(bases: &[PathBuf], inp: &Inputs) -> Result<PathBuf, String> {
    let Some(base) = bases.first() else {
        return Err("no temporary folder is safe to use".into());
    };
    let path = crate::tempname::private_dir_in(base, &inp.private_prefix())
        .map_err(|e| format!("{} cannot hold it: {e}", base.display()))?;
    check_dir(&path, inp.owner)
        .map(|()| path)
        .map_err(|r| r.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// An ordinary user whose temporary folder is `tmp`; a uid of its own per
    /// test, so the private folders' names never meet.
    fn user(tmp: &Path, uid: u32) -> Inputs {
        Inputs {
            explicit: None,
            root: false,
            owner: process::euid(),
            uid,
            runtime: None,
            temps: vec![tmp.to_path_buf()],
        }
    }

    fn give_away(path: &Path) -> bool {
        match std::os::unix::fs::lchown(path, Some(4242), Some(4242)) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("skipped: giving a folder to another uid needs root ({e})");
                false
            }
        }
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_usual_folder_is_used_when_it_is_missing_or_private() {
        let tmp = tempfile::tempdir().unwrap();
        let inp = user(tmp.path(), 7001);
        let usual = tmp.path().join("oslab-7001");
        let p = find(&inp);
        assert_eq!(p.home, usual);
        assert!(p.all.is_empty() && p.refused.is_empty(), "{p:?}");
        prepare(&usual, inp.owner).unwrap();
        let p = find(&inp);
        assert_eq!(
            (p.home.clone(), p.all.clone()),
            (usual.clone(), vec![usual])
        );
    }

    /// Regression (issue 27, item 2): /tmp/oslab-UID made by another user first.
    #[test]
    fn a_usual_folder_of_another_user_is_refused_for_a_fresh_private_one() {
        let tmp = tempfile::tempdir().unwrap();
        let inp = user(tmp.path(), 7002);
        let usual = tmp.path().join("oslab-7002");
        std::fs::create_dir(&usual).unwrap();
        chmod(&usual, 0o755);
        if !give_away(&usual) {
            return;
        }
        let p = find(&inp);
        assert_eq!(p.refused.len(), 1);
        let s = &p.refused[0];
        assert!(
            s.starts_with(&format!(
                "the journal folder {} is owned by uid 4242",
                usual.display()
            )),
            "{s}"
        );
        assert!(
            s.ends_with(&format!("journals go to {} instead", p.home.display())),
            "{s}"
        );
        let name = p.home.file_name().unwrap().to_str().unwrap();
        let hex = name.strip_prefix("oslab-7002-journals-").unwrap();
        assert!(
            hex.len() == crate::tempname::RANDOM_HEX && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name}"
        );
        let m = std::fs::symlink_metadata(&p.home).unwrap();
        assert_eq!(
            (m.uid(), m.permissions().mode() & 0o7777),
            (inp.owner, 0o700)
        );
        assert_eq!(p.all, vec![p.home.clone()]);
        // the next process finds the same folder again, and makes no other
        let again = find(&inp);
        assert_eq!(again.home, p.home);
        let privates = std::fs::read_dir(tmp.path()).unwrap().count() - 1;
        assert_eq!(privates, 1);
    }

    #[test]
    fn a_usual_folder_others_can_write_or_a_link_is_refused() {
        for (make, why) in [
            (0o777, "is writable by every user"),
            (0o770, "is writable by its group"),
            (0, "is a symbolic link"),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let inp = user(tmp.path(), 7003);
            let usual = tmp.path().join("oslab-7003");
            if make == 0 {
                let own = tmp.path().join("own");
                std::fs::create_dir(&own).unwrap();
                chmod(&own, 0o700);
                std::os::unix::fs::symlink(&own, &usual).unwrap();
            } else {
                std::fs::create_dir(&usual).unwrap();
                chmod(&usual, make);
            }
            let p = find(&inp);
            assert!(p.refused[0].contains(why), "{why}: {:?}", p.refused);
            assert!(p.home.starts_with(tmp.path()) && p.home != usual);
            assert!(!p.all.contains(&usual));
        }
    }

    #[test]
    fn a_folder_above_that_others_can_write_without_sticky_bit_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        // the temporary folder itself is that open folder: no private folder either
        let p = find(&user(&open, 7004));
        assert_eq!(p.home, open.join("oslab-7004"));
        assert!(p.all.is_empty());
        let s = &p.refused[0];
        assert!(s.contains("is writable by others and not sticky"), "{s}");
        assert!(s.ends_with("no change is made"), "{s}");
    }

    #[test]
    fn private_folders_of_another_user_or_open_to_others_are_not_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let inp = user(tmp.path(), 7005);
        let open = tmp.path().join("oslab-7005-journals-0123456789abcdef");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let theirs = tmp.path().join("oslab-7005-journals-fedcba9876543210");
        std::fs::create_dir(&theirs).unwrap();
        chmod(&theirs, 0o700);
        let gave = give_away(&theirs);
        let p = find(&inp);
        assert!(!p.all.contains(&open));
        assert_eq!(p.all.contains(&theirs), !gave);
    }

    #[test]
    fn a_refused_explicit_folder_is_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journals");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o777);
        let mut inp = user(tmp.path(), 7006);
        inp.explicit = Some(dir.clone());
        let p = find(&inp);
        assert_eq!(p.home, dir);
        assert!(p.all.is_empty());
        assert!(
            p.refused[0].contains("OSLAB_JOURNAL_DIR"),
            "{:?}",
            p.refused
        );
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "nothing made"
        );
        let e = prepare(&dir, inp.owner).unwrap_err();
        assert!(e.why.contains("every user"), "{e}");
    }

    #[test]
    fn root_keeps_journals_in_run_whatever_its_temporary_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inp = user(tmp.path(), 0);
        inp.root = true;
        inp.runtime = Some(tmp.path().to_path_buf());
        assert_eq!(inp.usual(), PathBuf::from("/run/oslab"));
        inp.root = false;
        assert_eq!(inp.usual(), tmp.path().join("oslab"));
    }

    #[test]
    fn a_folder_is_made_with_the_folders_above_it_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("b");
        let made = prepare(&dir, process::euid()).unwrap();
        assert_eq!(made, dir);
        for d in [tmp.path().join("a"), dir] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        let e = prepare(&tmp.path().join(".."), process::euid()).unwrap_err();
        assert!(e.why.contains("names no folder"), "{e}");
    }
}
