//! What the poller keeps of a cell every 100 ms: Dirty and Writeback, each
//! writer's file (its size and the pages of it not yet on the device), and the
//! governor's groups; and from the files, what of each reached the device.

use oslab_model::governor::Snapshot;

use oslab_services::cells::record::{GovernorRaw, GroupCount, GroupPoll};
use oslab_services::timed_writer::Poll;

#[derive(Debug, Default)]
pub struct Polled {
    pub polls: Vec<Poll>,
    pub groups: Vec<GroupPoll>,
    /// Per poll, per writer's file: (size, bytes still dirty or under write back).
    files: Vec<Vec<(u64, u64)>>,
    /// When the first writer had exited, seconds since the cell's start.
    pub first_end_s: Option<f64>,
    /// When the governor's daemon was killed on purpose.
    pub coordinator_killed_at_s: Option<f64>,
}

/// A file's size and its pages not yet on the device, bytes.
fn file_state(path: &std::path::Path, page: u64) -> (u64, u64) {
    let Ok(f) = std::fs::File::open(path) else {
        return (0, 0);
    };
    let size = f.metadata().map_or(0, |m| m.len());
    let pending = oslab_sys::fileio::cachestat(&f)
        .map_or(0, |cs| (cs.dirty + cs.writeback).saturating_mul(page));
    (size, pending)
}

impl Polled {
    pub fn add(
        &mut self,
        poll: Poll,
        files: &[std::path::PathBuf],
        page: u64,
        governor: Option<Snapshot>,
    ) {
        self.files
            .push(files.iter().map(|f| file_state(f, page)).collect());
        if let Some(s) = governor {
            self.groups.push(GroupPoll {
                t_s: poll.t_s,
                groups: s
                    .groups
                    .iter()
                    .map(|x| (x.dirty_bytes + x.writeback_bytes, x.limit_bytes))
                    .collect(),
            });
        }
        self.polls.push(poll);
    }

    /// Bytes of writer `i`'s file that reached the device over `span` (seconds
    /// since the cell's start): its size less its pages still in the page cache,
    /// at the polls nearest the span's ends.
    pub fn device_bytes(&self, i: usize, span: &Option<(f64, f64)>) -> Option<u64> {
        let (a, b) = (*span)?;
        let at = |t: f64| -> Option<u64> {
            let k = self
                .polls
                .iter()
                .enumerate()
                .min_by(|x, y| (x.1.t_s - t).abs().total_cmp(&(y.1.t_s - t).abs()))?
                .0;
            let (size, pending) = *self.files.get(k)?.get(i)?;
            Some(size.saturating_sub(pending))
        };
        Some(at(b)?.saturating_sub(at(a)?))
    }
}

/// The governor's own account, as much of its snapshot as the judging reads.
pub fn governor_raw(s: &Snapshot) -> GovernorRaw {
    GovernorRaw {
        passes: s.passes,
        pass_mean_us: s.pass_mean_us,
        pass_max_us: s.pass_max_us,
        cpu_percent: s.cpu_percent,
        groups: s
            .groups
            .iter()
            .map(|g| GroupCount {
                group: g.group.clone(),
                writes: g.writes,
                delayed_writes: g.delayed_writes,
                held_ms: g.held_ms,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_bytes_are_the_written_back_growth_over_the_span() {
        let mut p = Polled::default();
        for (t, size, pending) in [(0.0, 10, 10), (1.0, 100, 40), (2.0, 200, 50)] {
            p.polls.push(Poll {
                t_s: t,
                ..Poll::default()
            });
            p.files.push(vec![(size, pending)]);
        }
        // on the device: 0 at 0 s, 60 at 1 s, 150 at 2 s
        assert_eq!(p.device_bytes(0, &Some((0.9, 2.1))), Some(90));
        assert_eq!(p.device_bytes(0, &Some((0.0, 2.0))), Some(150));
        assert_eq!(p.device_bytes(1, &Some((0.0, 2.0))), None);
        assert_eq!(p.device_bytes(0, &None), None);
    }
}
