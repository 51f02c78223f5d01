// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* Write stalls as the kernel sees them.
 *
 * For every watched write-like system call (with file_calls, `oslab stalls`:
 * also reads and page faults, on files only) the program follows its task off
 * and on the CPU (sched_switch, sched_wakeup) and charges each off-CPU stretch
 * to a cause: a dirty-throttle pause (the task slept right after a
 * balance_dirty_pages decision with pause > 0), a wait on page write back
 * (folio_wait_writeback), other blocking (its kernel stack is kept), or the
 * run queue (preempted, or woken but not yet running). At the call's exit one
 * record carries the split.
 *
 * Beside that: every balance_dirty_pages decision, the device's bandwidth
 * estimates (bdi_dirty_ratelimit), every flusher pass with its reason
 * (writeback_start/writeback_written), the global limits, and per process the
 * pages it dirtied (writeback_dirty_folio, which also sees stores through
 * shared mappings, since the fault that dirties the page runs in the storer).
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "common.h"
#include "calls.h"
#include "files.h"
#include "device_queue.h"

/* Task states (include/linux/sched.h) after which a task may sleep outside
 * any call: __TASK_STOPPED, __TASK_TRACED, TASK_FROZEN. */
#define TASK_STOPPED_BIT 0x0004
#define TASK_TRACED_BIT 0x0008
#define TASK_FROZEN_BIT 0x8000

/* Causes of an off-CPU stretch. */
#define CAUSE_NONE 0
#define CAUSE_THROTTLE 1
#define CAUSE_WBWAIT 2

/* What opened a call: its system call's entry, or the file system function
 * (call_functions.h) it reached. */
#define OPENER_SYSCALL 0
#define OPENER_READ 1
#define OPENER_WRITE 2
#define OPENER_SYNC 3
#define OPENER_RANGE 4

/* Set by the loader before load. */
const volatile bool watch_all = true;
const volatile bool all_writes = false;
const volatile u64 write_threshold_ns = 10000000;
const volatile u64 stack_threshold_ns = 1000000;
/* Report each (process, file) pair the first time the process dirties the file. */
const volatile bool per_file = false;
/* Watch reads and page faults on files' mappings too, and only calls on
 * regular files and block devices (not pipes, sockets or terminals). */
const volatile bool file_calls = false;
/* Run-queue time after a wake-up from the task's own count of it (run_delay,
 * CONFIG_SCHED_INFO) instead of a program on every wake-up of the machine. */
const volatile bool runq_from_counters = false;

u64 last_limits_ns = 0;

struct task_state {
	u64 sys_start;
	u64 off_since;
	u64 woken_at;
	u64 throttle_ns;
	u64 wbwait_ns;
	u64 blocked_ns;
	u64 runq_ns;
	u64 count;
	s64 fd;
	u64 dev;
	u64 ino;
	u32 sysno;
	u32 pauses;
	u8 off_runnable;
	u8 off_cause;
	u8 pending;
	/* counted in calls_under_way */
	u8 counted;
	/* what opened the call: OPENER_SYSCALL or one of the functions'
	 * (call_functions.h) */
	u8 opener;
	/* runq_from_counters: the last blocked stretch, its run-queue part not
	 * known until the task's run_delay has counted it (below) */
	u8 unsettled_cause;
	u64 unsettled;
	u64 unsettled_start;
	u64 rd_out;
	u64 fault_end;
	/* run-queue time in an open fault not yet known to be the fault's */
	u64 fault_runq;
	/* the user registers' ip, sp and orig_ax (the error code) when the fault
	 * was taken: while the task is still in that fault, its saved user
	 * registers are these; in a system call orig_ax is the call's number */
	u64 fault_ip;
	u64 fault_sp;
	u64 fault_orig;
	u64 queued_write_bytes;
	u64 queued_read_bytes;
	char fname[FILE_NAME_LEN];
	u32 nframes;
	u64 frames[MAX_FRAMES];
};

struct dirtier {
	u64 pages;
	u64 first_ns;
	u64 last_ns;
	u64 cgroup_id;
	u32 policy;
	s32 prio;
	u32 rt_priority;
	u32 pad;
	char comm[16];
	u64 memcg_id;
	/* bios it submitted asking the device to flush its cache or write
	 * through it (REQ_PREFLUSH, REQ_FUA): its durable writes as the block
	 * layer sees them, whether or not they went through libc */
	u64 flushes;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} tasks SEC(".maps");

/* Pages dirtied, per process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct dirtier);
} dirtiers SEC(".maps");

struct file_key {
	u32 tgid;
	u32 pad;
	u64 dev;
	u64 ino;
};

/* (process, file) pairs already reported; the least recently used are forgotten. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct file_key);
	__type(value, u8);
} files_seen SEC(".maps");

/* The page count at a flusher pass's start, per bdi_writeback. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u64);
	__type(value, struct ev_flush);
} passes SEC(".maps");

#include "blocked.h"
#include "call_span.h"
#include "syscall_calls.h"
#include "offcpu.h"
#include "throttle.h"
#include "dirtied.h"
#include "flusher.h"
#include "call_functions.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";
