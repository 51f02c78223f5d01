//! Write-cache allocation per priority group: one implementation for the simulator
//! and the real governor.
//!
//! `wcall` is Algorithm 1 of the WCALL paper (material section 7): with weights 4, 2
//! and 1 for RT-HIGH, RT-LOW and NORMAL, a group's share is
//! tasks x weight x dirty pages over the sum of that product across groups, and its
//! limits are the global limits times its share. A writer whose group is over its
//! hard limit blocks HZ/10 and retries; the global limits still apply.
//!
//! Degenerate cases the paper leaves open, defined here:
//! - the sum is 0 (nothing dirty anywhere): no group limit, everyone proceeds;
//! - a group with no dirty pages has share 0 and limit 0, but it is not over it
//!   (0 > 0 is false), so its first write proceeds; from then on it has a share;
//! - one group alone: share 1, its limits are the global ones.
//!
//! `wcall-fair` (ours): shares by tasks x weight only, so a group that starts writing
//! is not at zero; groups with no active writer get nothing and their space flows to
//! the others; every active group keeps a floor of 1/(4 x active groups). The
//! RT-HIGH group is never held back by the policy. Every other active group, even
//! when no RT-HIGH writer is there yet, may use of the free-run ceiling (not the hard
//! limit) only what is left once the groups above it (their dirty + writeback
//! bytes), the dirty memory of programs nobody governs, and a headroom are taken
//! off, divided among the held-back groups by their shares; it is held against its
//! own dirty + writeback bytes. So together the groups stay where the kernel
//! pauses nobody, whatever the RT-HIGH group writes, and a high-priority writer
//! that arrives late finds room from its first write: lower writers that were
//! alone could otherwise have filled the cache up to their own (real-time,
//! raised) limit, and it would wait until that drained. A group nearing its
//! limit has its own files written back at once (group-targeted write back) and
//! its writers retry every 10 ms.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    #[default]
    Vanilla,
    Wcall,
    WcallFair,
}

impl Policy {
    /// Every policy's name, as [`Policy::parse`] and a scenario file take them.
    pub const NAMES: &'static [&'static str] = &["vanilla", "wcall", "wcall-fair"];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Vanilla => "vanilla",
            Policy::Wcall => "wcall",
            Policy::WcallFair => "wcall-fair",
        }
    }

    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "vanilla" => Some(Policy::Vanilla),
            "wcall" => Some(Policy::Wcall),
            "wcall-fair" => Some(Policy::WcallFair),
            _ => None,
        }
    }

    /// Whether an over-limit group's files are written back at once.
    pub fn targets_write_back(self) -> bool {
        self == Policy::WcallFair
    }
}

pub const WEIGHT_RT_HIGH: u64 = 4;
pub const WEIGHT_RT_LOW: u64 = 2;
pub const WEIGHT_NORMAL: u64 = 1;

/// The paper's weight for a group name.
pub fn weight(group: &str) -> u64 {
    match group {
        "rt-high" => WEIGHT_RT_HIGH,
        "rt-low" => WEIGHT_RT_LOW,
        _ => WEIGHT_NORMAL,
    }
}

/// What the policy needs to know of a group now.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct GroupState {
    /// Writers of the group that are writing.
    pub tasks: u64,
    pub weight: u64,
    /// Dirty bytes charged to the group.
    pub dirty: u64,
    /// Bytes of the group under write back.
    #[serde(default)]
    pub writeback: u64,
}

/// A group's share and limits.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct GroupLimit {
    pub share: f64,
    pub bg: u64,
    pub hard: u64,
    /// No limit applies (vanilla, or nothing dirty anywhere under wcall).
    pub unlimited: bool,
}

/// The limits of every group under `policy`, given the global (bg, hard) limits.
pub fn group_limits(policy: Policy, groups: &[GroupState], bg: u64, hard: u64) -> Vec<GroupLimit> {
    group_limits_in(policy, groups, bg, hard, 0)
}

/// As [`group_limits`], with `reserved` bytes of the basis kept out of the held
/// groups' room (wcall-fair: the ungoverned dirty memory and the headroom).
pub fn group_limits_in(
    policy: Policy,
    groups: &[GroupState],
    bg: u64,
    hard: u64,
    reserved: u64,
) -> Vec<GroupLimit> {
    (0..groups.len())
        .map(|g| group_limit_in(policy, groups, bg, hard, reserved, g))
        .collect()
}

/// Group `g`'s entry of [`group_limits_in`], computed alone and without
/// allocating: the simulator asks it before every write when the policy decides
/// per write.
pub fn group_limit_in(
    policy: Policy,
    groups: &[GroupState],
    bg: u64,
    hard: u64,
    reserved: u64,
    g: usize,
) -> GroupLimit {
    match policy {
        Policy::Vanilla => unlimited(bg, hard),
        Policy::Wcall => wcall_limit(groups, bg, hard, g),
        Policy::WcallFair => wcall_fair_limit(groups, bg, hard, reserved, g),
    }
}

/// No limit of the policy: the global ones stand.
fn unlimited(bg: u64, hard: u64) -> GroupLimit {
    GroupLimit {
        share: 1.0,
        bg,
        hard,
        unlimited: true,
    }
}

/// wcall: shares in proportion to tasks x weight x dirty bytes.
fn wcall_limit(groups: &[GroupState], bg: u64, hard: u64, g: usize) -> GroupLimit {
    let total = |x: &GroupState| (x.tasks * x.weight) as f64 * x.dirty as f64;
    let base: f64 = groups.iter().map(total).sum();
    if base == 0.0 {
        return unlimited(bg, hard);
    }
    let share = total(&groups[g]) / base;
    GroupLimit {
        share,
        bg: (bg as f64 * share) as u64,
        hard: (hard as f64 * share) as u64,
        unlimited: false,
    }
}

/// wcall-fair: shares in proportion to tasks x weight, each active group floored,
/// RT-HIGH never held, the groups above a held one taken out of its room.
fn wcall_fair_limit(
    groups: &[GroupState],
    bg: u64,
    hard: u64,
    reserved: u64,
    g: usize,
) -> GroupLimit {
    let n_active = groups.iter().filter(|x| x.tasks > 0).count();
    if n_active == 0 {
        return unlimited(bg, hard);
    }
    let floor = 1.0 / (4.0 * n_active as f64);
    let raw = |x: &GroupState| (x.tasks * x.weight) as f64;
    let sum: f64 = groups.iter().map(raw).sum();
    // floor every active group, then scale so the shares add up to 1
    let floored = |x: &GroupState| {
        if x.tasks > 0 {
            (raw(x) / sum).max(floor)
        } else {
            0.0
        }
    };
    let norm: f64 = groups.iter().map(floored).sum();
    let me = &groups[g];
    let share = floored(me) / norm;
    if me.tasks > 0 && never_held(me) {
        // RT-HIGH is never held back by the policy; what it occupies is taken
        // from the others' room
        return GroupLimit {
            share,
            bg,
            hard,
            unlimited: true,
        };
    }
    if me.tasks == 0 {
        // idle: whatever it still has dirty is allowed to drain
        return GroupLimit {
            share: 0.0,
            bg: 0,
            hard: u64::MAX,
            unlimited: false,
        };
    }
    let held_share: f64 = groups
        .iter()
        .filter(|x| x.tasks > 0 && !never_held(x))
        .map(|x| floored(x) / norm)
        .sum();
    let above: u64 = groups
        .iter()
        .filter(|h| h.weight > me.weight)
        .map(|h| h.dirty + h.writeback)
        .sum();
    let part = share / held_share;
    let room =
        |basis: u64| (basis.saturating_sub(above).saturating_sub(reserved) as f64 * part) as u64;
    GroupLimit {
        share,
        bg: room(bg),
        hard: room(hard),
        unlimited: false,
    }
}

/// The group the policy protects: the highest weight (RT-HIGH).
fn never_held(g: &GroupState) -> bool {
    g.weight >= WEIGHT_RT_HIGH
}

/// Whether a group's writer must wait before its next write (WCALL: its dirty pages
/// over its hard limit).
pub fn over(limit: &GroupLimit, group_dirty: u64) -> bool {
    !limit.unlimited && group_dirty > limit.hard
}

/// The test each policy applies: `wcall` counts the group's dirty pages, as the
/// paper; `wcall-fair` its whole footprint, dirty plus under write back, because on
/// a slow device pages under write back still count against everyone's limit.
pub fn over_policy(policy: Policy, limit: &GroupLimit, g: &GroupState) -> bool {
    over(limit, charged(policy, g))
}

/// The bytes a policy holds against a group's limit.
pub fn charged(policy: Policy, g: &GroupState) -> u64 {
    match policy {
        Policy::WcallFair => g.dirty + g.writeback,
        _ => g.dirty,
    }
}

/// How long a held writer of `wcall-fair` waits before it looks again.
pub const FAIR_RETRY_NS: u64 = 10_000_000;

/// What the policy tells one group's writers now.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Gate {
    pub limit: GroupLimit,
    /// Writers of the group wait before their next write.
    pub hold: bool,
    /// The group's files are to be written back now.
    pub push: bool,
    /// How long a held writer waits before it looks again, ns.
    pub retry_ns: u64,
}

/// The gate of every group, from the kernel's global limits (bytes): `wcall`
/// divides the hard limit as the paper does and blocks `wcall_block_ns` (HZ/10);
/// `wcall-fair` divides the free-run ceiling, pushes an over-limit group's files
/// and retries every 10 ms. The simulator and the governor both decide here.
pub fn gates(
    policy: Policy,
    groups: &[GroupState],
    bg: u64,
    hard: u64,
    freerun: u64,
    wcall_block_ns: u64,
) -> Vec<Gate> {
    let room = Room {
        bg,
        hard,
        freerun,
        ungoverned: 0,
        headroom: 0,
    };
    gates_in(policy, groups, &room, wcall_block_ns)
}

/// The kernel's global limits and what else occupies them, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Room {
    pub bg: u64,
    pub hard: u64,
    pub freerun: u64,
    /// Dirty and writeback memory of programs no group holds (global Dirty +
    /// Writeback less the groups' own).
    pub ungoverned: u64,
    /// Kept free under wcall-fair for the RT-HIGH group: what it may dirty before
    /// the next pass holds the others down to its footprint.
    pub headroom: u64,
}

/// A held group's files are written back once its footprint passes this share of
/// its limit, so that the kernel's background write back never has to catch up
/// with it while a higher writer writes.
pub const PUSH_AT: f64 = 0.75;

/// [`gates`] with what else occupies the kernel's limits: `wcall-fair` takes the
/// ungoverned dirty memory and the headroom off the held groups' room (`wcall`,
/// the paper's algorithm, knows only its groups).
pub fn gates_in(
    policy: Policy,
    groups: &[GroupState],
    room: &Room,
    wcall_block_ns: u64,
) -> Vec<Gate> {
    (0..groups.len())
        .map(|g| gate_in(policy, groups, room, wcall_block_ns, g))
        .collect()
}

/// Group `g`'s entry of [`gates_in`], computed alone and without allocating.
pub fn gate_in(
    policy: Policy,
    groups: &[GroupState],
    room: &Room,
    wcall_block_ns: u64,
    g: usize,
) -> Gate {
    let (basis, reserved) = match policy {
        Policy::WcallFair => (room.freerun, room.ungoverned.saturating_add(room.headroom)),
        _ => (room.hard, 0),
    };
    let limit = group_limit_in(policy, groups, room.bg, basis, reserved, g);
    let state = &groups[g];
    let hold = policy != Policy::Vanilla && over_policy(policy, &limit, state);
    let near = !limit.unlimited
        && limit.hard != u64::MAX
        && charged(policy, state) as f64 > limit.hard as f64 * PUSH_AT;
    Gate {
        limit,
        hold,
        push: (hold || near) && state.tasks > 0 && policy.targets_write_back(),
        retry_ns: if policy.targets_write_back() {
            FAIR_RETRY_NS
        } else {
            wcall_block_ns
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(tasks: u64, weight: u64, dirty: u64) -> GroupState {
        GroupState {
            tasks,
            weight,
            dirty,
            writeback: 0,
        }
    }

    #[test]
    fn wcall_algorithm_1_by_hand() {
        // one rt-high task with 100 dirty, two rt-low tasks with 200 dirty, one normal with 400
        let l = group_limits(
            Policy::Wcall,
            &[g(1, 4, 100), g(2, 2, 200), g(1, 1, 400)],
            1000,
            2000,
        );
        // totals 400, 800, 400 -> shares 1/4, 1/2, 1/4
        assert_eq!(l[0].share, 0.25);
        assert_eq!(l[1].share, 0.5);
        assert_eq!((l[1].bg, l[1].hard), (500, 1000));
        assert!(over(&l[2], 501));
        assert!(!over(&l[2], 500));
    }

    #[test]
    fn wcall_degenerate_cases() {
        // nothing dirty anywhere: no limits
        let l = group_limits(Policy::Wcall, &[g(1, 4, 0), g(2, 2, 0)], 10, 20);
        assert!(l.iter().all(|x| x.unlimited));
        // a group with no dirty pages has share 0 but is not over it
        let l = group_limits(Policy::Wcall, &[g(1, 4, 0), g(2, 2, 50)], 10, 20);
        assert_eq!(l[0].share, 0.0);
        assert!(!over(&l[0], 0));
        // one group alone gets the global limits
        let l = group_limits(Policy::Wcall, &[g(3, 1, 7)], 10, 20);
        assert_eq!((l[0].share, l[0].bg, l[0].hard), (1.0, 10, 20));
    }

    #[test]
    fn fair_shares_ignore_dirty_pages_and_keep_a_floor() {
        let l = group_limits(
            Policy::WcallFair,
            &[g(1, 4, 0), g(2, 2, 1000), g(0, 1, 50)],
            1000,
            2000,
        );
        // rt-high 4, rt-low 4 -> half each; the idle normal group gets nothing; the
        // top group (rt-high) is not held back at all, and with nothing of its own
        // dirty it leaves rt-low, the only group held back, the whole ceiling
        assert!((l[0].share - 0.5).abs() < 1e-12);
        assert!(l[0].unlimited && !over(&l[0], u64::MAX));
        assert!((l[1].share - 0.5).abs() < 1e-12);
        assert_eq!(l[1].hard, 2000);
        assert!(over(&l[1], 2001));
        assert_eq!(l[2].share, 0.0);
        assert!(!over(&l[2], 50), "an idle group's leftovers may drain");
        // a light group is lifted to the floor of 1/(4 x 2)
        let l = group_limits(Policy::WcallFair, &[g(1, 4, 0), g(1, 100, 0)], 1000, 2000);
        assert!(l[0].share > 0.1, "{}", l[0].share);
        assert!((l.iter().map(|x| x.share).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fair_keeps_room_for_a_late_high_writer() {
        let room = Room {
            bg: 32,
            hard: 64,
            freerun: 48,
            ungoverned: 0,
            headroom: 6,
        };
        // Two RT-LOW writers alone: no longer unlimited (they could fill up to
        // their raised real-time limit), but held to the free-run ceiling less the
        // headroom: 48 - 6 = 42.
        let alone = gates_in(Policy::WcallFair, &[g(0, 4, 0), g(2, 2, 40)], &room, 0);
        assert!(!alone[1].limit.unlimited);
        assert_eq!(alone[1].limit.hard, 42);
        assert!(!alone[1].hold);
        // At 43 they are held and their files pushed.
        let over = gates_in(Policy::WcallFair, &[g(0, 4, 0), g(2, 2, 43)], &room, 0);
        assert!(over[1].hold && over[1].push);
        // The RT-HIGH writer arrives with 10 of its own: 48 - 10 - 6 = 32 left.
        let with = gates_in(Policy::WcallFair, &[g(1, 4, 10), g(2, 2, 30)], &room, 0);
        assert!(with[0].limit.unlimited && !with[0].hold);
        assert_eq!(with[1].limit.hard, 32);
        // Ungoverned dirty memory (other programs) is taken off too: 48 - 10 - 6 - 8.
        let busy = Room {
            ungoverned: 8,
            ..room
        };
        let with = gates_in(Policy::WcallFair, &[g(1, 4, 10), g(2, 2, 20)], &busy, 0);
        assert_eq!(with[1].limit.hard, 24);
        // Past three quarters of its limit a group is pushed without being held:
        // 19 > 0.75 x 24.
        assert!(!with[1].hold && with[1].push);
        // Algorithm 1 knows only its groups: nothing reserved.
        let w = gates_in(Policy::Wcall, &[g(1, 4, 10), g(2, 2, 30)], &busy, 0);
        assert_eq!(w[1].limit.hard, 64 * 120 / 160);
    }

    #[test]
    fn gates_pick_the_basis_and_the_wait_per_policy() {
        let groups = [g(1, 4, 10), g(2, 2, 30)];
        // wcall: totals 40 and 120 -> shares 1/4, 3/4 of the hard limit 100
        let w = gates(Policy::Wcall, &groups, 50, 100, 75, 100_000_000);
        assert_eq!(w[1].limit.hard, 75);
        assert!(!w[1].hold, "30 dirty is under 75");
        assert!(!w[0].push && w[0].retry_ns == 100_000_000);
        // wcall-fair: rt-low may use the free-run ceiling 40 less rt-high's 10, and
        // its 30 is not over that; at 35 it is
        let f = gates(Policy::WcallFair, &groups, 50, 100, 40, 100_000_000);
        assert_eq!(f[1].limit.hard, 30);
        assert!(!f[1].hold);
        let f = gates(
            Policy::WcallFair,
            &[g(1, 4, 10), g(2, 2, 35)],
            50,
            100,
            40,
            100_000_000,
        );
        assert!(f[1].hold && f[1].push && f[1].retry_ns == FAIR_RETRY_NS);
        assert!(!f[0].hold, "the top group is never held");
        assert!(
            gates(Policy::Vanilla, &groups, 0, 0, 0, 1)
                .iter()
                .all(|x| !x.hold)
        );
    }

    #[test]
    fn fair_lower_groups_get_what_the_top_leaves() {
        let mut top = g(1, 4, 300);
        top.writeback = 200;
        // rt-low (2 tasks x 2) and normal (1 x 1) share the 1000 - 500 left:
        // shares 4/9 and 1/9 before the floor of 1/12; held share 5/9
        let l = group_limits(Policy::WcallFair, &[top, g(2, 2, 0), g(1, 1, 0)], 500, 1000);
        assert!(l[0].unlimited);
        let sum = l[1].hard + l[2].hard;
        assert!(
            (497..=500).contains(&sum),
            "the held groups split exactly the room left: {sum}"
        );
        assert!(
            l[1].hard > 3 * l[2].hard,
            "by their shares: {} vs {}",
            l[1].hard,
            l[2].hard
        );
        // a top group over the ceiling leaves nothing: the others wait
        let mut big = g(1, 4, 1200);
        big.writeback = 0;
        let l = group_limits(Policy::WcallFair, &[big, g(1, 1, 1)], 500, 1000);
        assert_eq!(l[1].hard, 0);
        assert!(over(&l[1], 1));
    }

    #[test]
    fn vanilla_never_limits() {
        let l = group_limits(Policy::Vanilla, &[g(1, 4, 1 << 30)], 1, 2);
        assert!(!over(&l[0], u64::MAX));
    }
}
