//! The writers of a validation cell: the RT-55 writer of 512 KiB every 20 ms and
//! its competitors, each an `oslab wcall writer` process that records every
//! write, so that both sides (kernel and model) see the same workload write by
//! write. (wb.wcall runs outside programs instead; here the per-write record of
//! every writer, competitors included, is what the comparison needs.)

use oslab_services::cells::record::{PERIOD_MS, Scenario};

/// One writer process to start.
#[derive(Debug, Clone)]
pub struct WriterArgs {
    pub name: String,
    pub fifo: Option<i32>,
    pub nice: Option<i32>,
    /// None: a bulk writer for `duration_s`.
    pub count: Option<u64>,
    pub duration_s: f64,
}

/// The writers of a scenario; the first is the one the comparison is about.
pub fn writers_for(s: Scenario, writes: u64) -> Vec<WriterArgs> {
    let span = writes as f64 * PERIOD_MS / 1000.0;
    let periodic = |name: &str, fifo: Option<i32>, nice: Option<i32>, count: u64| WriterArgs {
        name: name.into(),
        fifo,
        nice,
        count: Some(count),
        duration_s: span * 2.0 + 30.0,
    };
    let high = periodic("rt55", Some(55), None, writes);
    match s {
        Scenario::Alone => vec![high],
        Scenario::RtLow => vec![
            high,
            periodic("rt45-a", Some(45), None, writes),
            periodic("rt45-b", Some(45), None, writes),
        ],
        Scenario::Bulk => {
            let bulk = |name: &str| WriterArgs {
                name: name.into(),
                fifo: None,
                nice: None,
                count: None,
                duration_s: span,
            };
            vec![high, bulk("bulk-a"), bulk("bulk-b")]
        }
        Scenario::Fig7 => vec![periodic("nice4", None, Some(4), writes * 10 / 7)],
    }
}
