//! The PostgreSQL cluster wb.database measures: the distribution's binaries, run as
//! its own user (`postgres`), its data on the testbed, started with pg_ctl as a
//! service would be, and tied to oslab's life: a small shell started as the
//! server's user keeps the server up until its standard input (a pipe only oslab
//! holds) closes, then stops it, so the server goes when oslab does, even by
//! SIGKILL.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use oslab_harness::LabError;
use oslab_sys::process::{AdoptsOrphans, reap_adopted};

/// `$1` the binaries, `$2` the data folder, `$3` the socket folder; standard input
/// is oslab's pipe. TERM is ignored, and so are the signals a terminal sends its
/// whole foreground group (Ctrl-C's INT, QUIT, a closed terminal's HUP), which
/// would end the shell before it stops the server; oslab's death closes the pipe,
/// which stops it (PIPE ignored too: `echo up` to an oslab already gone).
/// A start that fails or times out is stopped too, so no half-started server stays.
/// An interrupted oslab undoes its changes before it exits, so by the time the pipe
/// closes the testbed may be unmounted (lazily: the server still holds it) and the
/// data folder's path gone: pg_ctl then cannot find the server, and the
/// postmaster's pid, read when it started, stops it instead (fast shutdown, then
/// immediate after 20 s, within the 90 s oslab gives the supervisor), and only
/// while that pid is still the process that started then (its start time in
/// /proc/PID/stat): a pid reused since is another process's. The mount and the
/// loop device go with it. A start that oslab interrupts (pg_ctl waiting for the
/// server to come up) has no pid yet and is not covered.
const SUPERVISOR: &str = r#"
trap '' INT HUP QUIT TERM PIPE
bin=$1; data=$2; sock=$3
"$bin/pg_ctl" -D "$data" -l "$data/../server.log" -w -t 60 \
  -o "-k $sock -c listen_addresses=''" start >/dev/null || {
  "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1
  exit 1
}
started() { sed -n 's/.*) //; /^[ZX]/d; p' "/proc/$1/stat" 2>/dev/null | cut -d ' ' -f 20; }
pm=$(head -n 1 "$data/postmaster.pid")
case $pm in ''|0*|*[!0-9]*) pm= ;; esac
[ -n "$pm" ] && since=$(started "$pm")
echo up
cat >/dev/null
"$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 && exit 0
[ -n "$pm" ] && [ -n "$since" ] || exit 1
same() { [ "$(started "$pm")" = "$since" ]; }
same && kill -INT "$pm" 2>/dev/null || exit 0
i=0
while same && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
same && kill -QUIT "$pm" 2>/dev/null
exit 0
"#;

/// The user the distribution runs PostgreSQL as.
pub const USER: &str = "postgres";

/// What a cluster needs that the machine may not have, or why it cannot run.
pub fn unavailable() -> Option<String> {
    let Some(bin) = binaries() else {
        return Some(
            "no PostgreSQL server here (pg_ctl, initdb, pgbench and psql under /usr/lib/postgresql/VERSION/bin): install the Debian package postgresql".into(),
        );
    };
    if user_ids(USER).is_none() {
        return Some(format!(
            "no user '{USER}' to run PostgreSQL as ({} is installed without it)",
            bin.display()
        ));
    }
    None
}

/// The newest /usr/lib/postgresql/VERSION/bin that has every program used here.
pub fn binaries() -> Option<PathBuf> {
    let wanted = ["pg_ctl", "initdb", "pgbench", "psql", "postgres"];
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| wanted.iter().all(|p| bin.join(p).is_file()))
        // root runs them: only from folders nobody else can change
        .filter(|(_, bin)| {
            let owners = [0, oslab_sys::process::euid()];
            let private = oslab_sys::chase::chain::LastFolder::Private;
            oslab_sys::chase::chain::stable_folder(bin, &owners, private).is_ok()
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// The server user's uid.
pub fn uid() -> Option<u32> {
    user_ids(USER).map(|(u, _)| u)
}

/// (uid, gid) of a user, from the system's user database.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        if f.next()? != name {
            return None;
        }
        let (_, uid, gid) = (f.next()?, f.next()?, f.next()?);
        Some((uid.parse().ok()?, gid.parse().ok()?))
    })
}

/// Makes the folder `dir`, new, for the server's user alone (mode 0700).
pub fn users_own_dir(dir: &Path) -> Result<(), LabError> {
    let (uid, gid) = user_ids(USER).ok_or_else(|| LabError::Failed(format!("no user '{USER}'")))?;
    std::fs::create_dir(dir)
        .and_then(|()| std::os::unix::fs::chown(dir, Some(uid), Some(gid)))
        .and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        })
        .map_err(|e| LabError::Failed(format!("{}: {e}", dir.display())))
}

/// A cluster made on the testbed: `home` holds the data and the socket.
pub struct Cluster {
    pub bin: PathBuf,
    pub home: PathBuf,
    /// runuser, setpriv and sh, found where only root can change them
    /// (`oslab_sys::program`).
    tools: [PathBuf; 3],
}

fn tool(name: &str) -> Result<PathBuf, LabError> {
    oslab_sys::program::find(name).map_err(LabError::Failed)
}

fn failed(what: &str, out: &std::process::Output) -> LabError {
    let err = String::from_utf8_lossy(&out.stderr);
    LabError::Failed(format!(
        "{what}: {}",
        err.lines().last().unwrap_or("(no message)")
    ))
}

impl Cluster {
    /// Makes `home` (the server user's) and a cluster in it.
    pub fn create(home: &Path) -> Result<Cluster, LabError> {
        let bin = binaries().ok_or_else(|| LabError::Failed("PostgreSQL vanished".into()))?;
        // the socket lives here: nobody but the server's user (and root) may reach it
        users_own_dir(home)?;
        let c = Cluster {
            bin,
            home: home.to_path_buf(),
            tools: [tool("runuser")?, tool("setpriv")?, tool("sh")?],
        };
        let out = c
            .as_user("initdb")
            .arg("-D")
            .arg(c.data())
            // only the server's own user, by the kernel's word (peer), and no TCP
            .args([
                "--auth-local=peer",
                "--auth-host=reject",
                "-E",
                "UTF8",
                "--no-locale",
            ])
            .output()
            .map_err(|e| LabError::Failed(format!("initdb: {e}")))?;
        if !out.status.success() {
            return Err(failed("initdb", &out));
        }
        Ok(c)
    }

    pub fn data(&self) -> PathBuf {
        self.home.join("data")
    }

    /// A program of the server's, run as its user.
    pub fn as_user(&self, program: &str) -> Command {
        let mut c = Command::new(&self.tools[0]);
        c.env("PATH", oslab_sys::program::trusted_path());
        c.args(["-u", USER, "--"]).arg(self.bin.join(program));
        c
    }

    /// The supervisor's command line, run as the server's user. setpriv changes
    /// the ids and runs the shell in its own place (runuser would stay as its
    /// parent and SIGKILL it on a TERM, leaving the server with nobody to stop it).
    pub fn supervisor_args(&self) -> Vec<String> {
        let text = |p: &Path| p.to_string_lossy().into_owned();
        vec![
            text(&self.tools[1]),
            format!("--reuid={USER}"),
            format!("--regid={USER}"),
            "--init-groups".into(),
            "--".into(),
            text(&self.tools[2]),
            "-c".into(),
            SUPERVISOR.into(),
            "oslab-postgres".into(),
            text(&self.bin),
            text(&self.data()),
            text(&self.home),
        ]
    }

    /// Output of psql running `sql` on database postgres, trimmed.
    pub fn query(&self, sql: &str) -> Result<String, LabError> {
        let out = self
            .as_user("psql")
            .arg("-h")
            .arg(&self.home)
            .args([
                "-X",
                "-d",
                "postgres",
                "-Atq",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .map_err(|e| LabError::Failed(format!("psql: {e}")))?;
        if !out.status.success() {
            return Err(failed(&format!("psql '{sql}'"), &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// pgbench with `args` on database postgres; its standard output.
    pub fn pgbench(&self, args: &[String]) -> Result<String, LabError> {
        let out = self
            .as_user("pgbench")
            .arg("-h")
            .arg(&self.home)
            .args(args)
            .arg("postgres")
            .current_dir(&self.home)
            .output()
            .map_err(|e| LabError::Failed(format!("pgbench: {e}")))?;
        if !out.status.success() {
            return Err(failed("pgbench", &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// A running server: stopped when dropped (its supervisor's pipe closes).
/// oslab adopts the server's processes while it runs: pg_ctl exits once the
/// server is up, which would hand the postmaster to init and its CPU time to
/// "other programs" (`oslab_sys::process::AdoptsOrphans`); once the
/// supervisor is done, oslab reaps them, so their time and their backends'
/// count as the experiment's.
pub struct Running {
    supervisor: Child,
    pipe: Option<ChildStdin>,
    _adopts: AdoptsOrphans,
}

impl Running {
    /// Starts the supervisor `cmd` (the cluster's, maybe behind `oslab wcall run`)
    /// and waits until the server is up.
    pub fn start(mut cmd: Command) -> Result<Running, LabError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let adopts = AdoptsOrphans::new()
            .map_err(|e| LabError::Failed(format!("cannot adopt the server's processes: {e}")))?;
        let mut child = oslab_sys::signals::child_of_oslab(
            &mut cmd,
            oslab_sys::signals::OnParentDeath::Terminate,
        )
        .spawn()
        .map_err(|e| LabError::Failed(format!("cannot start PostgreSQL: {e}")))?;
        let pipe = child.stdin.take();
        let mut out = child.stdout.take();
        let mut r = Running {
            supervisor: child,
            pipe,
            _adopts: adopts,
        };
        let mut word = [0u8; 3];
        let up = out
            .as_mut()
            .is_some_and(|o| std::io::Read::read_exact(o, &mut word).is_ok() && &word == b"up\n");
        if !up {
            return Err(LabError::Failed(
                "PostgreSQL did not start (its log is server.log beside the data folder)".into(),
            ));
        }
        r.pipe.as_mut().map(|p| p.flush());
        Ok(r)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.pipe.take();
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut ended = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.supervisor.try_wait() {
                ended = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !ended {
            let _ = self.supervisor.kill();
            let _ = self.supervisor.wait();
        }
        // the supervisor stopped the server (or was killed): what oslab adopted
        // of the server's user exits now, or is left to init when oslab goes
        if let Some(server_user) = uid() {
            let root = oslab_sys::fsread::Root::live();
            reap_adopted(
                &root,
                server_user,
                &[self.supervisor.id()],
                Duration::from_secs(10),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_found_by_name_only() {
        // root is in every user database; a name that is a prefix of it is not
        assert_eq!(user_ids("root"), Some((0, 0)));
        assert_eq!(user_ids("roo"), None);
    }
}
