//! The dirty thresholds of each rule set, in bytes.

use crate::config::{RuleSet, Sysctls};

const PAGE: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Thresholds {
    pub bg: u64,
    pub hard: u64,
}

impl Thresholds {
    /// Below this a linux-6 writer is never paused.
    pub fn freerun(&self) -> u64 {
        (self.bg + self.hard) / 2
    }
}

/// (normal task, real-time task) thresholds.
pub fn thresholds(rules: RuleSet, s: &Sysctls, dirtyable: u64) -> (Thresholds, Thresholds) {
    let pages = dirtyable / PAGE;
    match rules {
        RuleSet::Linux6 => {
            // the same arithmetic `oslab dirty explain` checks against the kernel
            let l = oslab_sys::dirty::compute(&oslab_sys::dirty::DirtyInputs {
                page_bytes: PAGE,
                // dirtyable_pages() adds one page so it is never 0
                free_pages: pages.saturating_sub(1),
                totalreserve_pages: 0,
                active_file_pages: 0,
                inactive_file_pages: 0,
                dirty_ratio: s.dirty_ratio,
                dirty_bytes: s.dirty_bytes,
                dirty_background_ratio: s.dirty_background_ratio,
                dirty_background_bytes: s.dirty_background_bytes,
            });
            let t = |x: oslab_sys::dirty::Limits| Thresholds {
                bg: x.bg_thresh * PAGE,
                hard: x.thresh * PAGE,
            };
            (t(l.normal), t(l.realtime))
        }
        RuleSet::Linux2626 => {
            // get_dirty_limits(): no *_bytes, a 5 % floor, background at most half.
            let ratio = s.dirty_ratio.max(5);
            let mut bg_ratio = s.dirty_background_ratio;
            if bg_ratio >= ratio {
                bg_ratio = ratio / 2;
            }
            let bg = bg_ratio * pages / 100;
            let hard = ratio * pages / 100;
            let n = Thresholds {
                bg: bg * PAGE,
                hard: hard * PAGE,
            };
            let rt = Thresholds {
                bg: (bg + bg / 4) * PAGE,
                hard: (hard + hard / 4) * PAGE,
            };
            (n, rt)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux6_bytes_and_rt_boost() {
        let s = Sysctls {
            dirty_bytes: 64 << 20,
            dirty_background_bytes: 32 << 20,
            ..Default::default()
        };
        let (n, rt) = thresholds(RuleSet::Linux6, &s, 8 << 30);
        assert_eq!((n.bg, n.hard), (32 << 20, 64 << 20));
        assert_eq!(rt.hard, (64 << 20) + (16 << 20) + (2 << 20));
        assert_eq!(n.freerun(), 48 << 20);
    }

    #[test]
    fn linux2626_has_the_floor_and_halving() {
        let s = Sysctls {
            dirty_ratio: 3,
            dirty_background_ratio: 10,
            ..Default::default()
        };
        let (n, rt) = thresholds(RuleSet::Linux2626, &s, 1000 * 4096 * 100);
        assert_eq!(n.hard, 5 * 1000 * 4096);
        assert_eq!(n.bg, 2 * 1000 * 4096);
        assert_eq!(rt.hard, n.hard + n.hard / 4);
    }

    #[test]
    fn linux6_halves_a_background_above_the_hard_limit() {
        let s = Sysctls {
            dirty_ratio: 10,
            dirty_background_ratio: 15,
            ..Default::default()
        };
        let (n, _) = thresholds(RuleSet::Linux6, &s, 1 << 30);
        assert_eq!(n.bg, n.hard / 2 / 4096 * 4096);
    }
}
