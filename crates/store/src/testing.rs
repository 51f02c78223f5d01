//! A throwaway PostgreSQL server for tests: the distribution's own binaries
//! (`initdb`, `postgres`), a cluster in a fresh folder under the temporary
//! directory, reached only through a Unix socket in that folder (no TCP port to
//! collide on), run as `nobody` when the tests run as root (PostgreSQL refuses
//! root).
//!
//! Nothing outlives the test process: a small shell supervises the server and
//! waits for end-of-file on a pipe that only the test process holds, so when that
//! process ends for any reason (a panic, SIGKILL included) the shell stops the
//! server and removes the folder.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The supervisor: `$1` the binaries, `$2` the folder, then options for the
/// server. Its standard input is the test process's pipe.
const SUPERVISOR: &str = r#"
bin=$1; dir=$2; shift 2
log="$dir/log"
fail() { cat "$log" >&2; rm -rf "$dir"; exit 1; }
"$bin/initdb" -D "$dir/data" -U oslab -A trust -E UTF8 --no-locale --no-sync >"$log" 2>&1 || fail
"$bin/postgres" -D "$dir/data" -k "$dir" -c listen_addresses= "$@" </dev/null >>"$log" 2>&1 &
pg=$!
cat >/dev/null
kill -INT "$pg" 2>/dev/null
wait "$pg"
rm -rf "$dir"
"#;

/// Settings for a server whose data may be lost: the tests' default.
pub const FAST: &[&str] = &[
    "-c",
    "fsync=off",
    "-c",
    "synchronous_commit=off",
    "-c",
    "full_page_writes=off",
];

pub struct PgServer {
    dir: PathBuf,
    supervisor: Child,
    pipe: Option<ChildStdin>,
}

/// Where the distribution keeps the server's binaries: the newest
/// /usr/lib/postgresql/VERSION/bin, else what `pg_config --bindir` says.
pub fn find_binaries() -> Option<PathBuf> {
    let has_server = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_server(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Some(d);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    has_server(&d).then_some(d)
}

fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The uid and gid of `name` from /etc/passwd.
fn user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

/// `%2F` for every `/`: a socket folder as the host part of a URL.
fn url_host(dir: &Path) -> String {
    dir.display()
        .to_string()
        .replace('%', "%25")
        .replace('/', "%2F")
}

/// Removes the folders of servers whose test process is gone (a test run killed
/// with SIGKILL never reaches the Drop that removes its folder; the server
/// itself stopped when the test's pipe closed): `oslab-pg-PID-N` in the
/// temporary folder, a directory (not a link) owned by `owner`, PID not running.
fn remove_stale_folders(owner: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("oslab-pg-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let owned_folder =
            std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == owner);
        if owned_folder && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl PgServer {
    /// Starts a server with [`FAST`] settings; the error says why none could be
    /// started (a reason to skip the test).
    pub fn start() -> Result<PgServer, String> {
        PgServer::start_with(FAST)
    }

    /// Starts a server with these extra `postgres` options.
    pub fn start_with(options: &[&str]) -> Result<PgServer, String> {
        let bin = find_binaries().ok_or(
            "no PostgreSQL server binaries (initdb, postgres) here: install the Debian package postgresql",
        )?;
        let owner = match effective_uid() {
            Some(0) => Some(user("nobody").ok_or(
                "the tests run as root and there is no user 'nobody' to run PostgreSQL as",
            )?),
            _ => None,
        };
        remove_stale_folders(owner.map_or_else(|| effective_uid().unwrap_or(0), |o| o.0));
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "oslab-pg-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(SUPERVISOR)
            .arg("oslab-pg")
            .arg(&bin)
            .arg(&dir)
            .args(options)
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some((uid, gid)) = owner {
            use std::os::unix::process::CommandExt;
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot give {} to nobody: {e}", dir.display()))?;
            cmd.uid(uid).gid(gid);
        }
        let mut supervisor = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("cannot start /bin/sh: {e}"));
            }
        };
        let pipe = supervisor.stdin.take();
        let mut server = PgServer {
            dir,
            supervisor,
            pipe,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if self.connect("postgres").is_ok() {
                return Ok(());
            }
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            // our own early connection attempts are logged as FATAL "the database
            // system is starting up": those only mean "not yet"
            let mut why = log
                .lines()
                .rfind(|l| l.contains("FATAL") && !l.contains("is starting up"))
                .map(String::from);
            if let Ok(Some(_)) = self.supervisor.try_wait() {
                let mut told = String::new();
                if let Some(mut e) = self.supervisor.stderr.take() {
                    let _ = e.read_to_string(&mut told);
                }
                why = Some(told.lines().last().unwrap_or("initdb failed").to_string());
            }
            if why.is_none() && Instant::now() > deadline {
                why = Some(log.lines().last().unwrap_or("(no log)").to_string());
            }
            if let Some(why) = why {
                return Err(format!("the test server did not start: {why}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The URL of database `dbname` on this server.
    pub fn url(&self, dbname: &str) -> String {
        format!("postgres://oslab@{}/{dbname}", url_host(&self.dir))
    }

    /// A client of database `dbname`, as the server's superuser.
    pub fn connect(&self, dbname: &str) -> Result<postgres::Client, postgres::Error> {
        postgres::Config::new()
            .host_path(&self.dir)
            .user("oslab")
            .dbname(dbname)
            .connect(postgres::NoTls)
    }

    /// Makes a new, empty database; its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        let mut c = self.connect("postgres").map_err(|e| e.to_string())?;
        c.batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .map_err(|e| format!("cannot create database {name}: {e}"))?;
        Ok(self.url(name))
    }

    /// The folder holding the cluster and its socket (removed when it stops).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        drop(self.pipe.take()); // the supervisor's signal to stop the server
        let _ = self.supervisor.wait();
        if self.dir.exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One server for the whole test binary, started on first use; the reason when
/// none can be. It stops when the test process ends (see the module's docs).
pub fn shared() -> Result<&'static PgServer, String> {
    static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
    SERVER
        .get_or_init(PgServer::start)
        .as_ref()
        .map_err(Clone::clone)
}

/// A new database on the shared server; its URL. `None` (with the reason printed)
/// where no server can be started here.
pub fn fresh_database(name: &str) -> Option<String> {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let server = match shared() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: no PostgreSQL server: {why}");
            return None;
        }
    };
    let name = format!("{name}_{}", COUNT.fetch_add(1, Ordering::Relaxed));
    Some(
        server
            .create_database(&name)
            .expect("the test server makes databases"),
    )
}
