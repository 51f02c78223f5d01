//! The device's share of the dirty limit: `__wb_calc_thresh` gives a device
//! thresh x (its write-back completions / everyone's), both counted in flexible
//! proportions (lib/flex_proportions.c) that are halved every
//! VM_COMPLETIONS_PERIOD_LEN (3 s). Other devices' completions come in at a steady
//! rate (a scenario input), so a busy second disk shrinks this device's share, as
//! the kernel's wb_thresh showed here while other programs wrote to the root disk.

/// Completions counted for the device and for every other one (pages), aged in
/// periods of `period` ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    period: i64,
    /// Where the next period starts, ticks.
    next: i64,
    device: f64,
    others: f64,
    /// Other devices' completions per tick.
    others_rate: f64,
    /// Up to when the others' completions are counted, ticks.
    counted_to: i64,
}

impl Share {
    /// As after a long steady stretch with the device completing `device_rate` and
    /// the others `others_rate` pages per second: each count holds one period's
    /// worth (the steady state of halving once a period), a period starting at `now`.
    pub fn steady(hz: u64, now: i64, device_rate: f64, others_rate: f64) -> Share {
        let period = 3 * hz as i64;
        let secs = period as f64 / hz as f64;
        Share {
            period,
            next: now + period,
            device: device_rate * secs,
            others: others_rate * secs,
            others_rate: others_rate / hz as f64,
            counted_to: now,
        }
    }

    /// Splits the counts so that the device holds `share` of them (a share the
    /// kernel was seen to give it), keeping their total.
    pub fn with_share(mut self, share: f64) -> Share {
        let total = self.device + self.others;
        let share = share.clamp(0.0, 1.0);
        self.device = total * share;
        self.others = total - self.device;
        self
    }

    /// Ages the counts up to tick `now`, period by period.
    fn advance(&mut self, now: i64) {
        while now >= self.next {
            self.others += self.others_rate * (self.next - self.counted_to) as f64;
            self.counted_to = self.next;
            // fprop_new_period: events -= events >> 1
            self.device -= (self.device / 2.0).floor();
            self.others -= (self.others / 2.0).floor();
            self.next += self.period;
        }
        if now > self.counted_to {
            self.others += self.others_rate * (now - self.counted_to) as f64;
            self.counted_to = now;
        }
    }

    /// `pages` of this device completed at tick `now`.
    pub fn completed(&mut self, now: i64, pages: u64) {
        self.advance(now);
        self.device += pages as f64;
    }

    /// The device's part of `thresh` at tick `now` (wb_calc_thresh with no min or
    /// max ratio set).
    pub fn of(&mut self, now: i64, thresh: u64) -> u64 {
        self.advance(now);
        let den = self.device.floor() + self.others.floor();
        if den <= 0.0 {
            return 0;
        }
        (thresh as f64 * (self.device.floor() / den)).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alone_the_device_has_the_whole_limit() {
        let mut s = Share::steady(250, 0, 10240.0, 0.0);
        assert_eq!(s.of(0, 16384), 16384);
        s.completed(1000, 128);
        assert_eq!(s.of(5000, 16384), 16384);
    }

    #[test]
    fn a_busy_second_disk_takes_its_part_and_ages_out() {
        // equal rates: half each
        let mut s = Share::steady(250, 0, 1000.0, 1000.0);
        assert_eq!(s.of(0, 16384), 8192);
        // the device stops; after one period (750 ticks) the others have added
        // 3000 and both were halved: device 3000 -> 1500, others 3000 + 3000 -> 3000
        assert_eq!(s.of(750, 16384), 16384 * 1500 / 4500);
        // a share seen at the start: 0.8 of the 6000 events are the device's
        let mut seen = Share::steady(250, 0, 1000.0, 1000.0).with_share(0.8);
        assert_eq!(seen.of(0, 10000), 8000);
    }
}
