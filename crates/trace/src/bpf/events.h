/* Records the programs put in their ring buffers. The Rust side reads them by
 * these exact offsets (src/records/decode.rs); the sizes are pinned here and
 * there, so a change to one side without the other fails to build or test.
 * Every field is naturally aligned and every struct a multiple of 8 bytes.
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns), so they line up
 * with perf and ftrace captures; jiffies are the kernel's own units.
 */
#ifndef OSLAB_EVENTS_H
#define OSLAB_EVENTS_H

#define EV_WRITE 1
#define EV_PAUSE 2
#define EV_BANDWIDTH 3
#define EV_FLUSH 4
#define EV_OFFCPU 5
#define EV_LIMITS 6
#define EV_SWITCH 7
#define EV_WAKEUP 8
#define EV_FILE 9

#define MAX_FRAMES 24
#define BDI_NAME_LEN 32
#define FILE_NAME_LEN 32

struct ev_header {
	u32 kind;
	u32 cpu;
	u64 ts;
};

/* Not a system call number: a page fault on a file's mapping (the call's
 * sysno in ev_write). */
#define CALL_PAGE_FAULT 0x10000

/* A watched system call that wrote or synced (write, pwrite64, writev,
 * pwritev, pwritev2, fsync, fdatasync, sync_file_range, msync), with
 * file_calls also one that read (read, pread64, readv, preadv, preadv2) or a
 * page fault on a file's mapping, with where its time went while it was off
 * the CPU. */
struct ev_write {
	struct ev_header h;
	u32 pid;
	u32 tgid;
	u32 sysno;
	s32 fd;
	u64 count;
	s64 ret;
	u64 start;
	u64 dur;
	u64 throttle_ns;
	u64 wbwait_ns;
	u64 blocked_ns;
	u64 runq_ns;
	u32 pauses;
	s32 prio;
	/* The caller's cgroup (v2, bpf_get_current_cgroup_id) and its memory
	 * cgroup (v1 or v2): kernfs ids, the inode numbers of their directories. */
	u64 cgroup_id;
	u64 memcg_id;
	/* The file: its device (kernel encoding) and inode; 0 where unknown. */
	u64 dev;
	u64 ino;
	/* The thread's name, kept for a process gone before it is named. */
	char comm[16];
	/* The file's name (its last path component) where the call named a
	 * descriptor, kept for a file closed before it is named. */
	char fname[FILE_NAME_LEN];
	/* For a read that blocked: the most bytes of writes, and of reads,
	 * queued at its file's device when it went to sleep. */
	u64 queued_write_bytes;
	u64 queued_read_bytes;
};

/* balance_dirty_pages: one decision, pause > 0 means the task then slept. */
struct ev_pause {
	struct ev_header h;
	u32 pid;
	u32 tgid;
	s32 prio;
	u32 policy;
	u64 bdi_id;
	u64 avail;
	u64 dirty;
	u64 thresh;
	u64 bg_thresh;
	u64 limit;
	u64 wb_dirty;
	u64 wb_thresh;
	u64 wb_bg_thresh;
	u64 pos_ratio;
	u64 dirty_ratelimit;
	u64 task_ratelimit;
	u64 dirtied;
	u64 period;
	s64 pause;
	u64 start_time;
	u64 paused_when;
	u64 jiffies;
	u32 nr_dirtied_pause;
	u32 has_pos_ratio;
};

/* bdi_dirty_ratelimit: the device's estimates, every BANDWIDTH_INTERVAL. */
struct ev_bandwidth {
	struct ev_header h;
	u64 bdi_id;
	char name[BDI_NAME_LEN];
	u64 write_bw;
	u64 avg_write_bw;
	u64 dirty_rate;
	u64 dirty_ratelimit;
	u64 task_ratelimit;
	u64 balanced_dirty_ratelimit;
};

/* One pass of the flusher (writeback_start to writeback_written), with the
 * device's estimates when it began: the bandwidths size its chunks, and
 * dirty_ratelimit, which only a throttled writer moves, is what the next one
 * starts from (the one place an idle device shows it). */
struct ev_flush {
	struct ev_header h;
	u64 bdi_id;
	char name[BDI_NAME_LEN];
	u64 start;
	u64 pages;
	u64 avg_write_bw;
	u64 write_bw;
	u64 dirty_ratelimit;
	u32 reason;
	u32 pad;
};

/* A watched call's task blocked for a reason other than throttling or write
 * back, for at least the stack threshold: its kernel stack when it blocked. */
struct ev_offcpu {
	struct ev_header h;
	u32 pid;
	u32 tgid;
	u32 sysno;
	u32 nframes;
	u64 start;
	u64 dur;
	u64 frames[MAX_FRAMES];
};

/* global_dirty_state: the global limits, at most one every 10 ms. */
struct ev_limits {
	struct ev_header h;
	u64 bg_thresh;
	u64 thresh;
};

struct ev_switch {
	struct ev_header h;
	u32 prev_pid;
	u32 prev_tgid;
	u32 next_pid;
	u32 next_tgid;
	s32 prev_prio;
	s32 next_prio;
	u32 prev_state;
	u32 preempt;
};

struct ev_wakeup {
	struct ev_header h;
	u32 pid;
	u32 tgid;
	s32 prio;
	u32 target_cpu;
};

/* A process dirtied a page of a file for the first time (per_file only). */
struct ev_file {
	struct ev_header h;
	u32 pid;
	u32 tgid;
	u64 dev;
	u64 ino;
	u32 policy;
	s32 prio;
};

_Static_assert(sizeof(struct ev_header) == 16, "ev_header");
_Static_assert(sizeof(struct ev_file) == 48, "ev_file");
_Static_assert(sizeof(struct ev_write) == 200, "ev_write");
_Static_assert(sizeof(struct ev_pause) == 184, "ev_pause");
_Static_assert(sizeof(struct ev_bandwidth) == 104, "ev_bandwidth");
_Static_assert(sizeof(struct ev_flush) == 104, "ev_flush");
_Static_assert(sizeof(struct ev_offcpu) == 240, "ev_offcpu");
_Static_assert(sizeof(struct ev_limits) == 32, "ev_limits");
_Static_assert(sizeof(struct ev_switch) == 48, "ev_switch");
_Static_assert(sizeof(struct ev_wakeup) == 32, "ev_wakeup");

#endif
