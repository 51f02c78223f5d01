//! How the governor's tables are shared between users: every table and queue
//! any user can add to (governed processes, launchers, files opened for them,
//! connections waiting to be answered) keeps room only root and the
//! coordinator's own user may take, and caps what each other user holds. An entry
//! is never pushed out to make room: a request that finds no room is refused.
//!
//! A cap alone would not do: a user with a range of subordinate uids has many
//! uids, so together they could still fill a table; the reserved room is what
//! keeps root served.

use std::collections::HashMap;

/// The sharing rule of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Entries in all.
    pub total: usize,
    /// Entries only privileged users (root, the coordinator's user) may take.
    pub reserved: usize,
    /// The most entries one unprivileged user may hold.
    pub per_uid: usize,
}

/// What a table holds now, as far as a new entry of one user is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Entries in all.
    pub total: usize,
    /// Entries of unprivileged users.
    pub unprivileged: usize,
    /// Entries of the user asking.
    pub of_uid: usize,
}

/// Whether `uid` is served from the reserved room of a governor run by
/// `coordinator_uid`.
pub fn privileged(uid: u32, coordinator_uid: u32) -> bool {
    uid == 0 || uid == coordinator_uid
}

impl Quota {
    /// Whether one more entry of a user fits: privileged users up to the total,
    /// others within their cap and outside the reserved room. The reason when not.
    pub fn admits(&self, privileged: bool, held: Held) -> Result<(), &'static str> {
        if held.total >= self.total {
            return Err("it is full");
        }
        if privileged {
            return Ok(());
        }
        if held.of_uid >= self.per_uid {
            return Err("this user holds as many entries as one user may");
        }
        if held.unprivileged >= self.total.saturating_sub(self.reserved) {
            return Err("the rest is kept for root");
        }
        Ok(())
    }

    /// Whether a new entry of `uid` fits beside entries of `uids`.
    pub fn fits(
        &self,
        uids: impl Iterator<Item = u32>,
        uid: u32,
        coordinator_uid: u32,
    ) -> Result<(), &'static str> {
        self.fits_in(&Tally::of(uids, coordinator_uid), uid)
    }

    /// Whether a new entry of `uid` fits in a table that holds `t`.
    pub fn fits_in(&self, t: &Tally, uid: u32) -> Result<(), &'static str> {
        self.admits(privileged(uid, t.coordinator_uid), t.held(uid))
    }
}

/// A table's entries counted by user, kept up to date as entries come and go (a
/// pass that adds many entries does not count the table again for each).
#[derive(Debug, Clone, Default)]
pub struct Tally {
    coordinator_uid: u32,
    total: usize,
    unprivileged: usize,
    by_uid: HashMap<u32, usize>,
}

impl Tally {
    /// The entries of users `uids` of a governor of `coordinator_uid`.
    pub fn of(uids: impl Iterator<Item = u32>, coordinator_uid: u32) -> Tally {
        let mut t = Tally {
            coordinator_uid,
            ..Tally::default()
        };
        for u in uids {
            t.add(u);
        }
        t
    }

    pub fn held(&self, uid: u32) -> Held {
        Held {
            total: self.total,
            unprivileged: self.unprivileged,
            of_uid: self.by_uid.get(&uid).copied().unwrap_or(0),
        }
    }

    pub fn add(&mut self, uid: u32) {
        self.total += 1;
        self.unprivileged += !privileged(uid, self.coordinator_uid) as usize;
        *self.by_uid.entry(uid).or_default() += 1;
    }

    pub fn remove(&mut self, uid: u32) {
        let Some(n) = self.by_uid.get_mut(&uid).filter(|n| **n > 0) else {
            return;
        };
        *n -= 1;
        self.total -= 1;
        self.unprivileged -= !privileged(uid, self.coordinator_uid) as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const Q: Quota = Quota {
        total: 16,
        reserved: 4,
        per_uid: 5,
    };

    #[test]
    fn root_takes_the_reserved_room_and_others_stop_short_of_it() {
        let mut held: Vec<u32> = Vec::new();
        // three users with five entries each: the third gets two, the room left
        // short of the reserved four
        for uid in [1000, 1001, 1002] {
            while Q.fits(held.iter().copied(), uid, 0).is_ok() {
                held.push(uid);
            }
        }
        assert_eq!(held.len(), 12);
        assert!(Q.fits(held.iter().copied(), 1003, 0).is_err());
        // root (and the coordinator's user) take the rest
        for uid in [0, 0, 77, 0] {
            assert_eq!(Q.fits(held.iter().copied(), uid, 77), Ok(()));
            held.push(uid);
        }
        assert_eq!(Q.fits(held.iter().copied(), 0, 77), Err("it is full"));
    }

    /// An entry's owner and whether it is being added (else the oldest entry of
    /// that owner goes).
    fn op() -> impl Strategy<Value = (u32, bool)> {
        // uids 0 (root), 7 (the coordinator's), 1000..1010 (others)
        let uid = prop_oneof![Just(0u32), Just(7u32), 1000u32..1010];
        (uid, prop::bool::weighted(0.8))
    }

    proptest! {
        /// Whatever others add and remove, in whatever order: no unprivileged user
        /// holds more than its cap, together they never reach into the reserved
        /// room, and a privileged user is refused only when the table is full.
        #[test]
        fn no_order_of_requests_takes_roots_room(ops in prop::collection::vec(op(), 0..400)) {
            let mut held: Vec<u32> = Vec::new();
            // kept entry by entry, as a pass keeps it
            let mut kept = Tally::of(std::iter::empty(), 7);
            for (uid, add) in ops {
                if !add {
                    if let Some(i) = held.iter().position(|u| *u == uid) {
                        held.remove(i);
                        kept.remove(uid);
                    }
                    continue;
                }
                let fits = Q.fits_in(&kept, uid);
                prop_assert_eq!(fits, Q.fits(held.iter().copied(), uid, 7));
                if privileged(uid, 7) {
                    prop_assert_eq!(fits.is_ok(), held.len() < Q.total);
                }
                if fits.is_ok() {
                    held.push(uid);
                    kept.add(uid);
                }
                let h = kept.held(uid);
                prop_assert_eq!(h, Tally::of(held.iter().copied(), 7).held(uid));
                prop_assert!(h.total <= Q.total);
                prop_assert!(h.unprivileged <= Q.total - Q.reserved);
                if !privileged(uid, 7) {
                    prop_assert!(h.of_uid <= Q.per_uid);
                }
            }
        }
    }
}
