use std::os::unix::fs::PermissionsExt;

use super::chain::{LastFolder, stable_file, stable_folder};
use super::*;

fn me() -> u32 {
    crate::process::euid()
}

/// A user that is not this one, to stand for "another user" without root: a
/// link of ours is then a link of someone the walk does not trust.
fn stranger() -> u32 {
    me().wrapping_add(4242)
}

fn real_tempdir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().canonicalize().unwrap();
    (d, real)
}

fn found_path(r: Reached) -> PathBuf {
    match r {
        Reached::Found { item, .. } => item.path,
        other => panic!("not found: {other:?}"),
    }
}

#[test]
fn own_links_are_followed_and_missing_names_kept() {
    let (_d, real) = real_tempdir();
    std::fs::create_dir(real.join("sub")).unwrap();
    std::fs::write(real.join("sub/f"), "x").unwrap();
    std::os::unix::fs::symlink("sub", real.join("l")).unwrap();
    let r = reach(&real.join("l/f"), &[me()], LastLink::Follow).unwrap();
    assert_eq!(found_path(r), real.join("sub/f"));
    let Reached::Missing { folder, missing } =
        reach(&real.join("l/new.json"), &[me()], LastLink::Follow).unwrap()
    else {
        panic!("not missing");
    };
    assert_eq!(folder.path, real.join("sub"));
    assert_eq!(missing, vec![OsString::from("new.json")]);
    let Reached::Missing { missing, .. } =
        reach(&real.join("no/such/x"), &[me()], LastLink::Follow).unwrap()
    else {
        panic!("not missing");
    };
    assert_eq!(missing.len(), 3);
    let r = reach(&real.join("sub/../l/f"), &[me()], LastLink::Follow).unwrap();
    assert_eq!(found_path(r), real.join("sub/f"));
    std::os::unix::fs::symlink("loop", real.join("loop")).unwrap();
    let e = reach(&real.join("loop"), &[me()], LastLink::Follow).unwrap_err();
    assert!(e.0.contains("symbolic links lead"), "{e}");
    let e = reach(&real.join("sub/f/x"), &[me()], LastLink::Follow).unwrap_err();
    assert!(e.0.ends_with("sub/f is not a folder"), "{e}");
}

#[test]
fn a_link_of_an_untrusted_owner_is_refused_wherever_it_stands() {
    let (_d, real) = real_tempdir();
    std::fs::create_dir(real.join("sub")).unwrap();
    std::fs::write(real.join("sub/f"), "x").unwrap();
    std::os::unix::fs::symlink(real.join("sub"), real.join("deps")).unwrap();
    std::os::unix::fs::symlink(real.join("sub/f"), real.join("last")).unwrap();
    for p in [real.join("deps/f"), real.join("last")] {
        let e = reach(&p, &[stranger()], LastLink::Follow).unwrap_err();
        assert!(e.0.contains("is a symbolic link owned by"), "{e}");
        assert!(e.0.contains("oslab follows only links owned by uid"), "{e}");
    }
    let e = reach(&real.join("last"), &[], LastLink::Follow).unwrap_err();
    assert!(e.0.contains("oslab follows no symbolic link here"), "{e}");
    // the link itself, not followed, is what a removal acts on
    let r = reach(&real.join("last"), &[], LastLink::Keep).unwrap();
    let Reached::Found { item, .. } = r else {
        panic!("not found")
    };
    assert_eq!(kind(&item.st), libc::S_IFLNK);
}

#[test]
fn this_process_descriptors_are_named_as_such() {
    assert!(matches!(
        reach(Path::new("/proc/self/fd/1"), &[0, me()], LastLink::Follow),
        Ok(Reached::Descriptor(1))
    ));
    if Path::new("/dev/stdout").exists() {
        assert!(matches!(
            reach(Path::new("/dev/stdout"), &[0, me()], LastLink::Follow),
            Ok(Reached::Descriptor(1))
        ));
    }
}

#[test]
fn folders_others_can_write_break_the_chain_unless_sticky() {
    let (_d, real) = real_tempdir();
    let open = real.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::create_dir(open.join("in")).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let owners = [0, me()];
    let e = stable_folder(&open.join("in"), &owners, LastFolder::MaySticky).unwrap_err();
    assert!(
        e.0.contains("writable by every user (mode 777) and not sticky"),
        "{e}"
    );
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(
        stable_folder(&open.join("in"), &owners, LastFolder::MaySticky).unwrap(),
        open.join("in")
    );
    stable_folder(&open, &owners, LastFolder::MaySticky).unwrap();
    let e = stable_folder(&open, &owners, LastFolder::Private).unwrap_err();
    assert!(e.0.contains("files are made in it by name"), "{e}");
    let e = stable_folder(&open.join("in"), &[stranger()], LastFolder::MaySticky).unwrap_err();
    assert!(e.0.contains("could be swapped"), "{e}");
}

#[test]
fn a_stable_file_is_reached_without_links_of_others_and_kept_from_writers() {
    let (_d, real) = real_tempdir();
    std::fs::create_dir(real.join("lib")).unwrap();
    let lib = real.join("lib/x.so");
    std::fs::write(&lib, "x").unwrap();
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(real.join("lib"), real.join("deps")).unwrap();
    let owners = [0, me()];
    assert_eq!(stable_file(&real.join("deps/x.so"), &owners).unwrap(), lib);
    let e = stable_file(&real.join("deps/x.so"), &[stranger()]).unwrap_err();
    assert!(e.0.contains("symbolic link"), "{e}");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = stable_file(&lib, &owners).unwrap_err();
    assert!(e.0.contains("would be run as it is"), "{e}");
    let e = stable_file(&real.join("lib"), &owners).unwrap_err();
    assert!(e.0.contains("not a regular file"), "{e}");
}

#[test]
fn the_caller_is_the_effective_user_or_who_ran_sudo() {
    if me() != 0 {
        assert_eq!(caller(), me());
    } else if std::env::var_os("SUDO_UID").is_none() {
        assert_eq!(caller(), 0);
    }
}
