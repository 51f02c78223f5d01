//! The manual's sections that clap's grammar cannot give: EXIT STATUS,
//! ENVIRONMENT, FILES and EXAMPLES, appended to every page `oslab man` writes
//! (EXAMPLES to oslab(1) alone). A test finds every variable the code reads and
//! checks that ENVIRONMENT names it.

/// Every environment variable oslab reads, with what it does.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "OSLAB_DB",
        "The results database: a file, or a postgres:// URL (as --db). Default: $XDG_DATA_HOME/oslab/results.db.",
    ),
    (
        "OSLAB_MACHINE",
        "The machine name runs are stored under (default: the host name), to tell apart machines that share a database.",
    ),
    (
        "OSLAB_JOURNAL_DIR",
        "Where journals of system changes are kept (default: /run/oslab for root, else $XDG_RUNTIME_DIR/oslab, else $TMPDIR/oslab-UID). It must be a folder of the user's own that nobody else can write.",
    ),
    (
        "OSLAB_WCALL_LIB",
        "The governor's interposer to load into governed programs (default: liboslab_wcall.so next to the oslab binary when nobody else could have put it there, else the copy oslab carries, written out for the run).",
    ),
    (
        "OSLAB_WCALL_SOCK",
        "Set by oslab wcall run for the interposer in the governed program: the governor's socket. Not for users to set.",
    ),
    (
        "OSLAB_COMPLETE",
        "Set by the shell code oslab completions SHELL prints, when the shell asks oslab for completions: oslab then prints candidates and does nothing else. Not for users to set.",
    ),
    (
        "OSLAB_LIBBPF_LINES",
        "How many of libbpf's last log lines an error loading the kernel-tracing programs shows (default 3).",
    ),
    (
        "XDG_DATA_HOME",
        "The default database is $XDG_DATA_HOME/oslab/results.db (when it is an absolute path; else ~/.local/share/oslab/results.db).",
    ),
    (
        "HOME",
        "The default database is ~/.local/share/oslab/results.db when XDG_DATA_HOME is not set.",
    ),
    (
        "XDG_RUNTIME_DIR",
        "A user's journals ($XDG_RUNTIME_DIR/oslab) and governor sockets ($XDG_RUNTIME_DIR/oslab-wcall).",
    ),
    (
        "TMPDIR",
        "Scratch files, the testbed's image and, without XDG_RUNTIME_DIR, a user's journals and governor sockets (default /tmp).",
    ),
    (
        "SUDO_UID",
        "Set by sudo: for root started by sudo, the user whose links and folders oslab trusts as root's when it reaches a path named on the command line (outputs, inputs, --db, --scratch). Links and folders of any other user are not followed or used.",
    ),
    (
        "PATH",
        "Where oslab finds the programs it runs itself (losetup, mkfs.ext4, perf, cc, dd, setpriv): only in the folders of PATH that nobody but root (or the user oslab runs as) can change; those programs run with PATH narrowed to them. A command given after -- runs from PATH as a shell would run it.",
    ),
    (
        "COLUMNS",
        "The width tables fit when standard output is not a terminal (unset: rows are printed whole, as with --wide).",
    ),
    (
        "PGPASSWORD",
        "The password for a postgres:// database whose URL names none.",
    ),
    (
        "PATH",
        "Where oslab wcall run looks for the program it is given, to check it is dynamically linked.",
    ),
    (
        "NOTIFY_SOCKET",
        "Set by systemd for a Type=notify service: oslab wcall daemon says READY=1 there once its socket answers.",
    ),
    (
        "LD_PRELOAD",
        "Kept after the interposer for the programs oslab wcall run governs.",
    ),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Done (a claim that does not hold on this machine is a result, not a failure).",
    ),
    (
        "1",
        "The command failed at run time, or found nothing of what was asked (no such run, machine or experiment).",
    ),
    (
        "2",
        "Bad usage: an unknown option, a value out of range, a file that cannot be read as asked.",
    ),
    ("3", "Root is needed for what was asked."),
    (
        "128+N",
        "Ended by signal N (Ctrl-C: 130) after undoing every system change.",
    ),
    (
        "other",
        "Commands that run a program (wcall run, tweak --, stalls --) exit with its status.",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "~/.local/share/oslab/results.db",
        "The results database (SQLite), unless OSLAB_DB or --db names another.",
    ),
    (
        "/run/oslab/",
        "Root's journals of system changes, read by oslab restore (a user's: $XDG_RUNTIME_DIR/oslab).",
    ),
    (
        "/run/oslab-wcall/NAME.sock",
        "The socket of root's governor NAME (a user's: $XDG_RUNTIME_DIR/oslab-wcall/).",
    ),
    (
        "liboslab_wcall.so",
        "The governor's interposer, next to the oslab binary; else oslab writes the copy it carries into a fresh folder oslab-interposer-XXXXXX (in /run, /var/tmp or /tmp for root; $XDG_RUNTIME_DIR or $TMPDIR for a user) and removes it when it exits.",
    ),
];

const EXAMPLES: &[(&str, &str)] = &[
    (
        "oslab info",
        "This machine: CPUs, caches, memory, kernel, write-back settings.",
    ),
    (
        "sudo oslab run all --quick --html report.html",
        "Every experiment, quickly, with a report to open in a browser.",
    ),
    (
        "oslab run mem.latency --json -",
        "One experiment, its result as JSON on standard output.",
    ),
    (
        "oslab compare 1 2",
        "Two stored runs side by side, with what is beyond noise.",
    ),
    (
        "oslab dirty explain",
        "The dirty limits as the running kernel computes them.",
    ),
    (
        "sudo oslab stalls --threshold 50ms -- cp big /mnt/usb/",
        "Every file call of cp over 50 ms, and what it waited for.",
    ),
    (
        "sudo oslab wcall daemon --sync-guard 2MiB",
        "The write-cache governor for every program started under it.",
    ),
    (
        "oslab sim run paper-fig2",
        "A write-back scenario simulated under each policy.",
    ),
    (
        "sudo oslab restore",
        "Undo what an interrupted run left changed.",
    ),
];

/// Roff text of the extra sections for the page of `page` (`oslab`,
/// `oslab-run`, ...).
pub fn sections(page: &str) -> String {
    let mut out = String::new();
    section(&mut out, "EXIT STATUS", EXIT_STATUS);
    section(&mut out, "ENVIRONMENT", ENVIRONMENT);
    section(&mut out, "FILES", FILES);
    if page == "oslab" {
        section(&mut out, "EXAMPLES", EXAMPLES);
    }
    out
}

fn section(out: &mut String, title: &str, items: &[(&str, &str)]) {
    out.push_str(&format!(".SH \"{title}\"\n"));
    for (term, text) in items {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(term), roff(text)));
    }
}

/// Text safe in a roff line: backslashes doubled, and a leading dot or quote
/// escaped so it is never read as a request.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\\\").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}
