//! Reading ring-buffer records by the layouts in src/bpf/events.h. A record of a
//! kind this code does not know, or one shorter than its kind's size, is dropped
//! (counted by the caller), never trusted.

use oslab_model::trace::{Bandwidth, FlushReason};

use crate::records::{
    DirtiedFile, Event, FlushPass, Limits, OffCpuRaw, Pause, Switch, Wakeup, WriteCall,
};

pub const EV_WRITE: u32 = 1;
pub const EV_PAUSE: u32 = 2;
pub const EV_BANDWIDTH: u32 = 3;
pub const EV_FLUSH: u32 = 4;
pub const EV_OFFCPU: u32 = 5;
pub const EV_LIMITS: u32 = 6;
pub const EV_SWITCH: u32 = 7;
pub const EV_WAKEUP: u32 = 8;
pub const EV_FILE: u32 = 9;

/// The byte sizes pinned by `_Static_assert` in events.h.
pub const SIZES: [(u32, usize); 9] = [
    (EV_WRITE, 200),
    (EV_PAUSE, 184),
    (EV_BANDWIDTH, 104),
    (EV_FLUSH, 104),
    (EV_OFFCPU, 240),
    (EV_LIMITS, 32),
    (EV_SWITCH, 48),
    (EV_WAKEUP, 32),
    (EV_FILE, 48),
];

const MAX_FRAMES: usize = 24;
const NAME_LEN: usize = 32;

/// Reads native-endian fields in order.
struct Fields<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        b.copy_from_slice(&self.data[self.at..self.at + N]);
        self.at += N;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_ne_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_ne_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_ne_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_ne_bytes(self.take())
    }
    /// A NUL-padded name of N bytes.
    fn name<const N: usize>(&mut self) -> String {
        let raw: [u8; N] = self.take();
        let end = raw.iter().position(|&b| b == 0).unwrap_or(N);
        String::from_utf8_lossy(&raw[..end]).into_owned()
    }
}

/// One record; None when its kind is unknown or it is too short.
pub fn decode(data: &[u8]) -> Option<Event> {
    if data.len() < 16 {
        return None;
    }
    let kind = u32::from_ne_bytes(data[0..4].try_into().ok()?);
    let size = SIZES.iter().find(|(k, _)| *k == kind)?.1;
    if data.len() < size {
        return None;
    }
    let mut f = Fields { data, at: 4 };
    let cpu = f.u32();
    let ts = f.u64();
    Some(match kind {
        EV_WRITE => write_call(&mut f),
        EV_PAUSE => pause(&mut f, ts),
        EV_BANDWIDTH => bandwidth(&mut f, ts),
        EV_FLUSH => flush(&mut f, ts),
        EV_OFFCPU => offcpu(&mut f),
        EV_LIMITS => Event::Limits(Limits {
            ts_ns: ts,
            bg_thresh: f.u64(),
            thresh: f.u64(),
        }),
        EV_SWITCH => switch(&mut f, ts, cpu),
        EV_WAKEUP => Event::Wakeup(Wakeup {
            ts_ns: ts,
            cpu,
            pid: f.u32(),
            tgid: f.u32(),
            prio: f.i32(),
        }),
        EV_FILE => dirtied_file(&mut f, ts),
        _ => return None,
    })
}

fn write_call(f: &mut Fields) -> Event {
    let pid = f.u32();
    let tgid = f.u32();
    let sysno = f.u32();
    Event::Write(WriteCall {
        pid,
        tgid,
        call: syscall_name(sysno).to_string(),
        fd: f.i32(),
        count: f.u64(),
        ret: f.i64(),
        start_ns: f.u64(),
        dur_ns: f.u64(),
        throttle_ns: f.u64(),
        wbwait_ns: f.u64(),
        blocked_ns: f.u64(),
        runq_ns: f.u64(),
        pauses: f.u32(),
        prio: f.i32(),
        cgroup_id: f.u64(),
        memcg_id: f.u64(),
        dev: f.u64(),
        ino: f.u64(),
        comm: f.name::<16>(),
        file_name: f.name::<32>(),
        queued_write_bytes: f.u64(),
        queued_read_bytes: f.u64(),
    })
}

fn pause(f: &mut Fields, ts: u64) -> Event {
    let pid = f.u32();
    let tgid = f.u32();
    let prio = f.i32();
    let policy = f.u32();
    let bdi_id = f.u64();
    let avail = f.u64();
    let dirty = f.u64();
    let thresh = f.u64();
    let bg_thresh = f.u64();
    let limit = f.u64();
    let wb_dirty = f.u64();
    let wb_thresh = f.u64();
    let wb_bg_thresh = f.u64();
    let pos_ratio = f.u64();
    let dirty_ratelimit = f.u64();
    let task_ratelimit = f.u64();
    let dirtied = f.u64();
    let period_jiffies = f.u64();
    let pause_jiffies = f.i64();
    let _start_time = f.u64();
    let paused_when = f.u64();
    let jiffies = f.u64();
    let nr_dirtied_pause = f.u32();
    let has_pos_ratio = f.u32() != 0;
    Event::Pause(Pause {
        ts_ns: ts,
        pid,
        tgid,
        prio,
        policy,
        bdi_id,
        avail,
        dirty,
        thresh,
        bg_thresh,
        limit,
        wb_dirty,
        wb_thresh,
        wb_bg_thresh,
        pos_ratio: has_pos_ratio.then_some(pos_ratio),
        dirty_ratelimit,
        task_ratelimit,
        dirtied,
        period_jiffies,
        pause_jiffies,
        think_jiffies: if paused_when == 0 {
            0
        } else {
            jiffies.wrapping_sub(paused_when) as i64
        },
        nr_dirtied_pause,
        jiffies,
    })
}

fn bandwidth(f: &mut Fields, ts: u64) -> Event {
    Event::Bandwidth(Bandwidth {
        ts_ns: ts,
        bdi_id: f.u64(),
        bdi: f.name::<NAME_LEN>(),
        write_bw: f.u64(),
        avg_write_bw: f.u64(),
        dirty_rate: f.u64(),
        dirty_ratelimit: f.u64(),
        task_ratelimit: f.u64(),
        balanced_dirty_ratelimit: f.u64(),
    })
}

fn flush(f: &mut Fields, ts: u64) -> Event {
    let bdi_id = f.u64();
    let bdi = f.name::<NAME_LEN>();
    let start_ns = f.u64();
    let pages = f.u64();
    let avg_write_bw = f.u64();
    let write_bw = f.u64();
    let dirty_ratelimit = f.u64();
    let reason = FlushReason::from_kernel(f.u32());
    Event::Flush(FlushPass {
        start_ns,
        end_ns: ts,
        bdi_id,
        bdi,
        reason,
        pages,
        avg_write_bw,
        write_bw,
        dirty_ratelimit,
    })
}

fn offcpu(f: &mut Fields) -> Event {
    let pid = f.u32();
    let tgid = f.u32();
    let sysno = f.u32();
    let nframes = (f.u32() as usize).min(MAX_FRAMES);
    let start_ns = f.u64();
    let dur_ns = f.u64();
    let frames = (0..nframes).map(|_| f.u64()).filter(|&a| a != 0).collect();
    Event::OffCpu(OffCpuRaw {
        pid,
        tgid,
        sysno,
        start_ns,
        dur_ns,
        frames,
    })
}

fn switch(f: &mut Fields, ts: u64, cpu: u32) -> Event {
    let prev_pid = f.u32();
    let prev_tgid = f.u32();
    let next_pid = f.u32();
    let next_tgid = f.u32();
    let prev_prio = f.i32();
    let next_prio = f.i32();
    let prev_state = f.u32();
    let preempt = f.u32() != 0;
    Event::Switch(Switch {
        ts_ns: ts,
        cpu,
        prev_pid,
        prev_tgid,
        next_pid,
        next_tgid,
        prev_prio,
        next_prio,
        prev_runnable: preempt || prev_state == 0,
    })
}

fn dirtied_file(f: &mut Fields, ts: u64) -> Event {
    let pid = f.u32();
    let tgid = f.u32();
    let kdev = f.u64();
    DirtiedFile {
        ts_ns: ts,
        pid,
        tgid,
        dev: user_dev(kdev),
        ino: f.u64(),
        policy: f.u32(),
        prio: f.i32(),
    }
    .into()
}

/// A device number as the kernel keeps it inside (MKDEV: major << 20 | minor) in
/// the encoding stat() gives user space.
pub fn user_dev(kernel_dev: u64) -> u64 {
    let (major, minor) = ((kernel_dev >> 20) as u32, (kernel_dev & 0xfffff) as u32);
    libc::makedev(major, minor)
}

/// Not a system call: a page fault on a file's mapping (events.h).
pub const CALL_PAGE_FAULT: u32 = 0x10000;

/// The calls the program watches, by this architecture's numbers.
pub fn syscall_name(sysno: u32) -> &'static str {
    if sysno == CALL_PAGE_FAULT {
        return "page fault";
    }
    #[cfg(target_arch = "x86_64")]
    let table: &[(u32, &str)] = &[
        (0, "read"),
        (17, "pread64"),
        (19, "readv"),
        (295, "preadv"),
        (327, "preadv2"),
        (1, "write"),
        (18, "pwrite64"),
        (20, "writev"),
        (26, "msync"),
        (74, "fsync"),
        (75, "fdatasync"),
        (277, "sync_file_range"),
        (296, "pwritev"),
        (328, "pwritev2"),
    ];
    #[cfg(target_arch = "aarch64")]
    let table: &[(u32, &str)] = &[
        (63, "read"),
        (65, "readv"),
        (67, "pread64"),
        (69, "preadv"),
        (286, "preadv2"),
        (64, "write"),
        (66, "writev"),
        (68, "pwrite64"),
        (70, "pwritev"),
        (82, "fsync"),
        (83, "fdatasync"),
        (84, "sync_file_range"),
        (227, "msync"),
        (287, "pwritev2"),
    ];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let table: &[(u32, &str)] = &[];
    table
        .iter()
        .find(|(n, _)| *n == sysno)
        .map(|(_, name)| *name)
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header(kind: u32, size: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(size);
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&1u32.to_ne_bytes());
        v.extend_from_slice(&5_000u64.to_ne_bytes());
        v
    }

    fn push32(v: &mut Vec<u8>, x: u32) {
        v.extend_from_slice(&x.to_ne_bytes());
    }
    fn push64(v: &mut Vec<u8>, x: u64) {
        v.extend_from_slice(&x.to_ne_bytes());
    }

    #[test]
    fn a_write_record_reads_back_field_by_field() {
        let mut v = header(EV_WRITE, 136);
        push32(&mut v, 10);
        push32(&mut v, 9);
        push32(&mut v, 1);
        push32(&mut v, (-3i32) as u32);
        for x in [4096u64, 4096, 1000, 250, 100, 20, 10, 5] {
            push64(&mut v, x);
        }
        push32(&mut v, 2);
        push32(&mut v, 44);
        // cgroup, memory cgroup, device (8:1 in the kernel's encoding), inode
        for x in [77u64, 78, (8 << 20) | 1, 12] {
            push64(&mut v, x);
        }
        v.extend_from_slice(b"dd\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
        let mut name = [0u8; 32];
        name[..5].copy_from_slice(b"x.dat");
        v.extend_from_slice(&name);
        push64(&mut v, 3 << 20);
        push64(&mut v, 4096);
        assert_eq!(v.len(), 200);
        let Some(Event::Write(w)) = decode(&v) else {
            panic!("not a write")
        };
        assert_eq!(
            (w.pid, w.tgid, w.fd, w.count, w.ret),
            (10, 9, -3, 4096, 4096)
        );
        assert_eq!((w.start_ns, w.dur_ns, w.throttle_ns), (1000, 250, 100));
        assert_eq!((w.wbwait_ns, w.blocked_ns, w.runq_ns), (20, 10, 5));
        assert_eq!((w.pauses, w.prio), (2, 44));
        assert_eq!((w.cgroup_id, w.memcg_id, w.ino), (77, 78, 12));
        assert_eq!((w.comm.as_str(), w.file_name.as_str()), ("dd", "x.dat"));
        assert_eq!((w.queued_write_bytes, w.queued_read_bytes), (3 << 20, 4096));
        assert_eq!(user_dev(w.dev), libc::makedev(8, 1));
        #[cfg(target_arch = "x86_64")]
        assert_eq!(w.call, "write");
        assert_eq!(syscall_name(CALL_PAGE_FAULT), "page fault");
    }

    #[test]
    fn a_pause_record_computes_think_time_as_the_tracepoint_does() {
        let mut v = header(EV_PAUSE, 184);
        push32(&mut v, 10);
        push32(&mut v, 9);
        push32(&mut v, 120);
        push32(&mut v, 0);
        // bdi_id, avail, dirty, thresh, bg_thresh, limit, wb_dirty, wb_thresh,
        // wb_bg_thresh, pos_ratio, dirty_ratelimit, task_ratelimit, dirtied, period
        for x in [
            7u64, 1, 15000, 16384, 8192, 16384, 15000, 16000, 8000, 512, 2560, 1280, 32, 25,
        ] {
            push64(&mut v, x);
        }
        push64(&mut v, 12); // pause
        push64(&mut v, 99); // start_time
        push64(&mut v, 1000); // paused_when
        push64(&mut v, 1004); // jiffies
        push32(&mut v, 32);
        push32(&mut v, 1);
        assert_eq!(v.len(), 184);
        let Some(Event::Pause(p)) = decode(&v) else {
            panic!("not a pause")
        };
        assert_eq!(
            (p.dirty, p.thresh, p.bg_thresh, p.limit),
            (15000, 16384, 8192, 16384)
        );
        assert_eq!(p.pos_ratio, Some(512));
        assert_eq!(
            (p.pause_jiffies, p.period_jiffies, p.think_jiffies),
            (12, 25, 4)
        );
        assert_eq!(p.nr_dirtied_pause, 32);
    }

    #[test]
    fn kernel_device_numbers_read_as_stat_gives_them() {
        // 254:1 inside the kernel is (254 << 20) | 1; stat() says makedev(254, 1)
        assert_eq!(user_dev((254 << 20) | 1), libc::makedev(254, 1));
        assert_eq!(user_dev((7 << 20) | 300), libc::makedev(7, 300));
    }

    #[test]
    fn short_and_unknown_records_are_dropped() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&header(EV_WRITE, 16)), None);
        assert_eq!(decode(&header(99, 64)), None);
    }

    #[test]
    fn a_flush_pass_names_its_device_and_reason() {
        let mut v = header(EV_FLUSH, 104);
        push64(&mut v, 3);
        let mut name = [0u8; 32];
        name[..3].copy_from_slice(b"7:0");
        v.extend_from_slice(&name);
        push64(&mut v, 4000);
        push64(&mut v, 1024);
        push64(&mut v, 2560);
        push64(&mut v, 2600);
        push64(&mut v, 900);
        push32(&mut v, 3);
        push32(&mut v, 0);
        let Some(Event::Flush(f)) = decode(&v) else {
            panic!("not a flush")
        };
        assert_eq!(f.bdi, "7:0");
        assert_eq!(f.reason, FlushReason::Periodic);
        assert_eq!((f.start_ns, f.end_ns, f.pages), (4000, 5000, 1024));
        assert_eq!((f.avg_write_bw, f.write_bw), (2560, 2600));
        assert_eq!(f.dirty_ratelimit, 900);
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&data);
        }
    }
}
