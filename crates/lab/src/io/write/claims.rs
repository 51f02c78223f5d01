//! io.write's claims: buffered writes are faster than direct ones, and reach the
//! device later.

use oslab_model::{Claim, Environment};
use oslab_units::human_bytes;

use super::figures::{BIG, CellFigures, Probes, cell_figures, disk_flags, opt_bytes};
use super::{Mode, Raw};
use oslab_harness::check::{Check, Condition, Rule};

pub(super) const BUFFERED_FASTER: Check = Check {
    id: "buffered-faster-than-direct",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Buffered writes finish much faster than O_DIRECT ones because they only dirty the page cache",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (a reader's run on a Surface Pro 7, in a 2021 blog summary of the book: buffered 1.3 GB/s vs O_DIRECT 429 MB/s)",
};

pub(super) const DEVICE_LATER: Check = Check {
    id: "device-work-later",
    tolerates: &oslab_harness::interference::ANY,
    text: "With buffered writes the device work happens later, in write back",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (page cache)",
};

/// "Much faster": buffered at least this many times the O_DIRECT rate.
pub(super) const MIN_RATIO: f64 = 1.5;

/// "Later": under this share of the bytes on the device when write() returns ...
pub(super) const MAX_DURING: f64 = 0.2;

/// ... and at least this share once fdatasync has returned.
pub(super) const MIN_AFTER: f64 = 0.9;

/// Why O_DIRECT kept up with buffered writes, from what the environment shows.
pub(super) fn direct_not_slow(
    raw: &Raw,
    env: &Environment,
    p: &Probes,
    direct_mb_s: f64,
) -> String {
    let (cache, rotational) = disk_flags(raw, env);
    let disk = raw.disk.as_ref().map_or("the device", |d| d.disk.as_str());
    let cache_part = cache
        .as_deref()
        .map(|w| format!(" (it reports a '{w}' cache)"))
        .unwrap_or_default();
    let device_side = match (&env.machine.hypervisor.name, cache.as_deref(), rotational) {
        (_, _, _) if raw.disk.is_none() => {
            "the scratch directory is on no block device, so O_DIRECT writes went to memory"
                .to_string()
        }
        (Some(h), _, _) => format!(
            "{disk} is a virtual disk under {h}{cache_part}, so an O_DIRECT write can return once the host holds it, at {direct_mb_s:.0} MB/s here"
        ),
        (None, Some("write back"), _) => format!(
            "{disk} acknowledges writes from its volatile write cache ('write back'), so O_DIRECT writes returned at {direct_mb_s:.0} MB/s before reaching the medium"
        ),
        (None, _, Some(false)) => format!(
            "{disk} is solid-state{cache_part} and took 1 MiB direct writes at {direct_mb_s:.0} MB/s"
        ),
        (None, _, _) => {
            format!("{disk}{cache_part} took 1 MiB direct writes at {direct_mb_s:.0} MB/s")
        }
    };
    let balloon = match (
        env.machine.hypervisor.name.is_some(),
        env.machine.hypervisor.balloon_free_page_reporting,
    ) {
        (true, Some(true)) => {
            "; the virtio balloon's free page reporting hands freed memory to the host, so new pages fault on the host"
        }
        _ => "",
    };
    format!(
        "O_DIRECT is not slow here: {device_side}, while each new page-cache page costs {:.0} ns to touch (at most {:.0} MB/s of new pages; overwriting cached pages ran at {:.0} MB/s){balloon}",
        p.touch_new_ns, p.page_limit_mb_s, p.overwrite_mb_s
    )
}

pub(super) fn buffered_faster(raw: &Raw, env: &Environment, p: &Probes) -> Claim {
    let rate = |m: Mode| raw.cell(m, BIG).map(|c| cell_figures(c).write_rate);
    let (buffered, direct) = (rate(Mode::Buffered), rate(Mode::Direct));
    let subject = "buffered write() rate over O_DIRECT's, 1 MiB blocks";
    if let (Some(why), None) = (&raw.refused, direct) {
        return BUFFERED_FASTER.not_testable(
            &Rule::AtLeast(MIN_RATIO).describe(subject, "x"),
            why.clone(),
        );
    }
    let ratio = buffered.zip(direct).map(|(b, d)| b / d);
    let conditions = [Condition::from_option(
        subject,
        "x",
        Rule::AtLeast(MIN_RATIO),
        ratio,
        "no buffered or no O_DIRECT figure at 1 MiB blocks",
    )];
    let context = format!(
        "buffered {:.0} MB/s, O_DIRECT {:.0} MB/s",
        buffered.unwrap_or(f64::NAN),
        direct.unwrap_or(f64::NAN)
    );
    BUFFERED_FASTER.judge(&conditions, &context, |o| {
        if o.holds() {
            "write() only copied into the page cache; the device work came later".into()
        } else {
            direct_not_slow(raw, env, p, direct.unwrap_or(f64::NAN))
        }
    })
}

pub(super) fn device_later(raw: &Raw, env: &Environment, f: &CellFigures) -> Claim {
    let during = "device bytes while write() ran over bytes written";
    let after = "device bytes after it, until fdatasync returned, over bytes written";
    if raw.disk.is_none() {
        let expectation = format!(
            "{}, and {}",
            Rule::Below(MAX_DURING).describe(during, "x"),
            Rule::AtLeast(MIN_AFTER).describe(after, "x")
        );
        return DEVICE_LATER
            .not_testable(&expectation, "the scratch directory is on no block device");
    }
    let conditions = [
        Condition::new(during, "x", Rule::Below(MAX_DURING), f.during),
        Condition::new(after, "x", Rule::AtLeast(MIN_AFTER), f.after),
    ];
    let context = format!(
        "{} during the calls, {} after them; Dirty {} right after the calls",
        human_bytes(f.during_bytes.max(0.0) as u64),
        human_bytes(f.after_bytes.max(0.0) as u64),
        opt_bytes(f.dirty)
    );
    let page = env.machine.memory.page_bytes.max(1);
    let background = env
        .machine
        .dirty
        .nr_dirty_background_threshold_pages
        .map(|p| human_bytes(p * page));
    DEVICE_LATER.judge(&conditions, &context, |o| {
        if o.holds() {
            "write() returned with the data only in the page cache".into()
        } else if o.failed(0) {
            format!(
                "write back started while the writes were still running: the background limit was {} when the run began (reached, the flusher starts), or a slow copy gave the periodic flusher time",
                background.as_deref().unwrap_or("unknown")
            )
        } else {
            "fewer bytes reached the device than were written (compression or deduplication below?)".into()
        }
    })
}
