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

static __always_inline bool is_watched(u32 tgid)
{
	return watch_all || in_watched(tgid);
}

static __always_inline void bdi_name(char *dst, struct bdi_writeback *wb)
{
	struct backing_dev_info *bdi = BPF_CORE_READ(wb, bdi);
	if (bdi && bpf_core_field_exists(bdi->dev_name))
		bpf_probe_read_kernel_str(dst, BDI_NAME_LEN, bdi->dev_name);
}

/* Watched calls, and faults known to be on a file, under way on the whole
 * machine. While there are none, the scheduler's programs, which run on every
 * switch and wake-up, return at once. A fault counts once its file is named
 * (most faults are on anonymous memory and never are), so its sleeps before
 * that are seen only while something else is under way. It only errs upwards
 * (a call whose end is never seen), and then the programs just do their full
 * work. */
u64 calls_under_way = 0;

static __always_inline void count_in(struct task_state *s)
{
	if (!s->counted) {
		s->counted = 1;
		__sync_fetch_and_add(&calls_under_way, 1);
	}
}

static __always_inline void begin(struct task_state *s, u32 call)
{
	if (call != CALL_PAGE_FAULT)
		count_in(s);
	s->sys_start = bpf_ktime_get_ns();
	s->sysno = call;
	s->off_since = 0;
	s->woken_at = 0;
	s->throttle_ns = 0;
	s->wbwait_ns = 0;
	s->blocked_ns = 0;
	s->runq_ns = 0;
	s->pauses = 0;
	s->pending = CAUSE_NONE;
	s->queued_write_bytes = 0;
	s->queued_read_bytes = 0;
	s->unsettled = 0;
}

static __always_inline void close_fault(struct task_struct *t, struct task_state *s);

static __always_inline void finish(struct task_state *s)
{
	s->sys_start = 0;
	if (s->counted) {
		s->counted = 0;
		__sync_fetch_and_sub(&calls_under_way, 1);
	}
}

/* Opens a watched call on file f (NULL for msync) for task t. */
static __always_inline void open_call(struct task_struct *t, long id, struct file *f, long fd,
				      u64 count, u8 opener)
{
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return;
	close_fault(t, s);
	/* a sync inside the write it makes durable (O_SYNC, RWF_DSYNC) is that
	 * write's */
	if (s->sys_start && s->sysno == id && opener == OPENER_SYNC)
		return;
	file_identity(f, &s->dev, &s->ino, s->fname);
	begin(s, id);
	s->fd = fd;
	s->count = count;
	s->opener = opener;
}

/* Runs on every system call on the machine: a call that is not watched must
 * cost as little as possible (this is most of `oslab stalls`' overhead on a
 * syscall-heavy program), so the call number is checked before anything else
 * and the descriptor's file before the task's state is looked up. */
SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	bool reads = file_calls && is_read_call(id);
	if (!reads && !is_write_call(id))
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	if (!is_watched(t->tgid))
		return 0;
	long fd;
	u64 count;
	call_args(regs, id, &fd, &count);
	struct file *f = takes_fd(id) ? fd_file(t, fd) : NULL;
	if (file_calls && takes_fd(id) && !is_file(f))
		return 0;
	open_call(t, id, f, fd, count, OPENER_SYSCALL);
	return 0;
}

static __always_inline void settle(struct task_struct *t, struct task_state *s);

static __always_inline void end(struct task_struct *t, struct task_state *s, long ret, u64 now)
{
	settle(t, s);
	u64 dur = now - s->sys_start;
	if (all_writes || dur >= write_threshold_ns) {
		struct ev_write *e = reserve(sizeof(*e));
		if (e) {
			header(&e->h, EV_WRITE, now);
			e->pid = t->pid;
			e->tgid = t->tgid;
			e->sysno = s->sysno;
			e->fd = s->fd;
			e->count = s->count ? s->count : (ret > 0 ? ret : 0);
			e->ret = ret;
			e->start = s->sys_start;
			e->dur = dur;
			e->throttle_ns = s->throttle_ns;
			e->wbwait_ns = s->wbwait_ns;
			e->blocked_ns = s->blocked_ns;
			e->runq_ns = s->runq_ns;
			e->pauses = s->pauses;
			e->prio = t->prio;
			e->cgroup_id = bpf_get_current_cgroup_id();
			e->memcg_id = memcg_id(t);
			e->dev = s->dev;
			e->ino = s->ino;
			bpf_get_current_comm(e->comm, sizeof(e->comm));
			__builtin_memcpy(e->fname, s->fname, sizeof(e->fname));
			e->queued_write_bytes = s->queued_write_bytes;
			e->queued_read_bytes = s->queued_read_bytes;
			bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
		}
	}
	finish(s);
	s->pending = CAUSE_NONE;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	if (!calls_under_way)
		return 0;
#if defined(__TARGET_ARCH_x86)
	/* only a watched call has anything to end (the number stays in orig_ax) */
	long id = regs->orig_ax;
	if (!is_write_call(id) && !(file_calls && is_read_call(id)))
		return 0;
#endif
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (!s || !s->sys_start || s->sysno == CALL_PAGE_FAULT)
		return 0;
	end(t, s, ret, bpf_ktime_get_ns());
	return 0;
}

/* Page faults: a store through a shared mapping is throttled in the fault
 * that dirties the page, not in write(). No tracepoint marks a fault's end, so
 * a fault counts from its start (page_fault_user, x86) to the last time its
 * task came back on the CPU after sleeping in it; it is closed, and reported
 * if slow, at the task's next fault, watched system call or exit, or when the
 * task leaves the CPU outside it. A task is still in the fault while its saved
 * user registers are the fault's (ip, sp and orig_ax); in any system call after
 * the fault they are the call's. So an unwatched call (a pipe read, a sleep) costs
 * nothing here, and its sleeps are not the fault's. A preemption may be in
 * user mode after the fault returned, so it is not counted. */
static __always_inline void close_fault(struct task_struct *t, struct task_state *s)
{
	if (s->sys_start && s->sysno == CALL_PAGE_FAULT) {
		/* only a fault on a file's page, dirtied or read in
		 * (name_fault_file), is a file call; one on anonymous memory is
		 * not */
		if (s->fault_end && s->ino)
			end(t, s, 0, s->fault_end);
		finish(s);
	}
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	if (!file_calls)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	if (!is_watched(t->tgid))
		return 0;
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return 0;
	close_fault(t, s);
	if (s->sys_start)
		return 0;
	begin(s, CALL_PAGE_FAULT);
	s->fd = -1;
	s->count = 0;
	s->dev = 0;
	s->ino = 0;
	s->fname[0] = 0;
	s->fault_end = 0;
	s->fault_runq = 0;
#if defined(__TARGET_ARCH_x86)
	s->fault_ip = regs->ip;
	s->fault_sp = regs->sp;
	s->fault_orig = regs->orig_ax;
#endif
	return 0;
}

/* Whether the task is no longer in its open fault: it made a system call or
 * took another exception since, so its saved user registers moved. (Faults are
 * traced on x86 only: page_fault_user is x86's.) */
static __always_inline bool left_fault(struct task_struct *t, struct task_state *s)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return true;
	return regs->ip != s->fault_ip || regs->sp != s->fault_sp ||
	       regs->orig_ax != s->fault_orig;
#else
	return true;
#endif
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (s)
		close_fault(t, s);
	return 0;
}

/* The task's run_delay: its time runnable and waiting for a CPU, counted when
 * it is switched in. */
static __always_inline u64 run_delay(struct task_struct *t)
{
	if (bpf_core_field_exists(t->sched_info))
		return BPF_CORE_READ(t, sched_info.run_delay);
	return 0;
}

/* A blocked stretch of `blocked` ns from `start`: charged to its cause, and
 * kept with its kernel stack when it is long enough. */
static __always_inline void charge_blocked(struct task_struct *t, struct task_state *s, u8 cause,
					   u64 start, u64 blocked)
{
	if (cause == CAUSE_THROTTLE) {
		s->throttle_ns += blocked;
		return;
	}
	if (cause == CAUSE_WBWAIT) {
		s->wbwait_ns += blocked;
		return;
	}
	s->blocked_ns += blocked;
	if (blocked < stack_threshold_ns)
		return;
	struct ev_offcpu *e = reserve(sizeof(*e));
	if (!e)
		return;
	header(&e->h, EV_OFFCPU, bpf_ktime_get_ns());
	e->pid = t->pid;
	e->tgid = t->tgid;
	e->sysno = s->sysno;
	e->nframes = s->nframes;
	e->start = start;
	e->dur = blocked;
	__builtin_memcpy(e->frames, s->frames, sizeof(e->frames));
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* runq_from_counters: a blocked stretch ran from the task's switch out to its
 * switch in; the part after its wake-up, waiting for a CPU, is what its
 * run_delay grew by, which the kernel adds right after the switch in. So the
 * stretch is split at the first moment after that: the task's next switch
 * out, or the end of its call (it cannot wait again before either). */
static __always_inline void settle(struct task_struct *t, struct task_state *s)
{
	u64 len = s->unsettled;
	if (!len)
		return;
	s->unsettled = 0;
	u64 waited = run_delay(t) - s->rd_out;
	if (waited > len)
		waited = len;
	s->runq_ns += waited;
	charge_blocked(t, s, s->unsettled_cause, s->unsettled_start, len - waited);
}

/* The task leaves the CPU inside a watched call. */
static __always_inline u64 switched_out(void *ctx, bool preempt, struct task_struct *prev,
					unsigned int prev_state, struct task_state *s)
{
	settle(prev, s);
	u64 now = bpf_ktime_get_ns();
	s->off_since = now;
	s->woken_at = 0;
	s->off_runnable = preempt || prev_state == 0;
	s->nframes = 0;
	if (s->off_runnable) {
		s->off_cause = CAUSE_NONE;
		return now;
	}
	s->off_cause = s->pending;
	s->pending = CAUSE_NONE;
	if (runq_from_counters)
		s->rd_out = run_delay(prev);
	if (s->off_cause == CAUSE_NONE) {
		long n = bpf_get_stack(ctx, s->frames, sizeof(s->frames), 0);
		if (n > 0)
			s->nframes = n / sizeof(u64);
		if (file_calls && (is_read_call(s->sysno) || s->sysno == CALL_PAGE_FAULT))
			queued_at(s->dev, &s->queued_write_bytes, &s->queued_read_bytes);
	}
	return now;
}

/* The task is back on the CPU inside a watched call. */
static __always_inline void switched_in(struct task_struct *next, struct task_state *s, u64 now)
{
	bool fault = s->sysno == CALL_PAGE_FAULT;
	if (s->off_runnable) {
		if (fault)
			s->fault_runq += now - s->off_since;
		else
			s->runq_ns += now - s->off_since;
	} else {
		if (fault) {
			s->fault_end = now;
			s->runq_ns += s->fault_runq;
			s->fault_runq = 0;
		}
		if (runq_from_counters) {
			s->unsettled = now - s->off_since;
			s->unsettled_start = s->off_since;
			s->unsettled_cause = s->off_cause;
		} else {
			u64 woke = s->woken_at ? s->woken_at : now;
			s->runq_ns += now - woke;
			charge_blocked(next, s, s->off_cause, s->off_since, woke - s->off_since);
		}
	}
	s->off_since = 0;
	s->woken_at = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (!calls_under_way)
		return 0;
	u64 now = 0;
	struct task_state *s = bpf_task_storage_get(&tasks, prev, 0, 0);
	/* Stopped, traced or frozen: a sleep that may come after the fault
	 * returned (SIGSTOP, a debugger, the cgroup freezer) ends it first; so
	 * does a sleep in a later system call. */
	if (s && s->sys_start && s->sysno == CALL_PAGE_FAULT &&
	    ((prev_state & (TASK_STOPPED_BIT | TASK_TRACED_BIT | TASK_FROZEN_BIT)) ||
	     left_fault(prev, s)))
		close_fault(prev, s);
	if (s && s->sys_start)
		now = switched_out(ctx, preempt, prev, prev_state, s);

	s = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!s || !s->sys_start || !s->off_since)
		return 0;
	switched_in(next, s, now ? now : bpf_ktime_get_ns());
	return 0;
}

static __always_inline void woken(struct task_struct *p)
{
	if (!calls_under_way)
		return;
	struct task_state *s = bpf_task_storage_get(&tasks, p, 0, 0);
	if (s && s->sys_start && s->off_since && !s->off_runnable && !s->woken_at)
		s->woken_at = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!watch_all)
		follow_fork(parent, child);
	return 0;
}

static __always_inline void mark(u8 cause)
{
	if (!calls_under_way)
		return;
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (s && s->sys_start) {
		s->pending = cause;
		if (cause == CAUSE_THROTTLE)
			s->pauses++;
	}
}

/* The decision's own figures, the same on every kernel. */
static __always_inline void pause_decision(struct ev_pause *e, unsigned long dirty_ratelimit,
					   unsigned long task_ratelimit, unsigned long dirtied,
					   unsigned long period, long pause, unsigned long start_time)
{
	e->dirty_ratelimit = dirty_ratelimit;
	e->task_ratelimit = task_ratelimit;
	e->dirtied = dirtied;
	e->period = period;
	e->pause = pause;
	e->start_time = start_time;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

static __always_inline void pause_common(struct bdi_writeback *wb, struct ev_pause *e)
{
	struct task_struct *t = bpf_get_current_task_btf();
	e->pid = t->pid;
	e->tgid = t->tgid;
	e->prio = t->prio;
	e->policy = t->policy;
	e->nr_dirtied_pause = t->nr_dirtied_pause;
	e->paused_when = t->dirty_paused_when;
	e->jiffies = bpf_jiffies64();
	e->bdi_id = BPF_CORE_READ(wb, bdi, id);
}

/* Linux 6.x: the figures travel in the throttle control. */
SEC("tp_btf/balance_dirty_pages")
int BPF_PROG(on_pause, struct bdi_writeback *wb, struct dirty_throttle_control *dtc,
	     unsigned long dirty_ratelimit, unsigned long task_ratelimit,
	     unsigned long dirtied, unsigned long period, long pause, unsigned long start_time)
{
	if (pause > 0)
		mark(CAUSE_THROTTLE);
	struct ev_pause *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	header(&e->h, EV_PAUSE, bpf_ktime_get_ns());
	pause_common(wb, e);
	e->avail = BPF_CORE_READ(dtc, avail);
	e->dirty = BPF_CORE_READ(dtc, dirty);
	e->thresh = BPF_CORE_READ(dtc, thresh);
	e->bg_thresh = BPF_CORE_READ(dtc, bg_thresh);
	e->limit = bpf_core_field_exists(dtc->limit) ? BPF_CORE_READ(dtc, limit) : 0;
	e->wb_dirty = BPF_CORE_READ(dtc, wb_dirty);
	e->wb_thresh = BPF_CORE_READ(dtc, wb_thresh);
	e->wb_bg_thresh = BPF_CORE_READ(dtc, wb_bg_thresh);
	e->pos_ratio = BPF_CORE_READ(dtc, pos_ratio);
	e->has_pos_ratio = 1;
	pause_decision(e, dirty_ratelimit, task_ratelimit, dirtied, period, pause, start_time);
	return 0;
}

/* Kernels before the throttle control was passed: the figures are arguments. */
SEC("tp_btf/balance_dirty_pages")
int BPF_PROG(on_pause_args, struct bdi_writeback *wb, unsigned long thresh,
	     unsigned long bg_thresh, unsigned long dirty, unsigned long wb_thresh,
	     unsigned long wb_dirty, unsigned long dirty_ratelimit,
	     unsigned long task_ratelimit, unsigned long dirtied, unsigned long period,
	     long pause, unsigned long start_time)
{
	if (pause > 0)
		mark(CAUSE_THROTTLE);
	struct ev_pause *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	header(&e->h, EV_PAUSE, bpf_ktime_get_ns());
	pause_common(wb, e);
	e->avail = 0;
	e->dirty = dirty;
	e->thresh = thresh;
	e->bg_thresh = bg_thresh;
	e->limit = 0;
	e->wb_dirty = wb_dirty;
	e->wb_thresh = wb_thresh;
	e->wb_bg_thresh = 0;
	e->pos_ratio = 0;
	e->has_pos_ratio = 0;
	pause_decision(e, dirty_ratelimit, task_ratelimit, dirtied, period, pause, start_time);
	return 0;
}

SEC("tp_btf/folio_wait_writeback")
int BPF_PROG(on_wb_wait, struct folio *folio, struct address_space *mapping)
{
	mark(CAUSE_WBWAIT);
	return 0;
}

static __always_inline u64 folio_pages(struct folio *folio)
{
	unsigned long flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), folio);
	int head = bpf_core_enum_value(enum pageflags, PG_head);
	if (!(flags & (1UL << head)))
		return 1;
	if (bpf_core_field_exists(folio->_nr_pages))
		return BPF_CORE_READ(folio, _nr_pages);
	return 1UL << (BPF_CORE_READ(folio, _flags_1) & 0xff);
}

static __always_inline void report_file(struct task_struct *t, struct address_space *mapping)
{
	struct file_key k = {};
	k.tgid = t->tgid;
	struct inode *host = BPF_CORE_READ(mapping, host);
	if (!host)
		return;
	k.dev = BPF_CORE_READ(host, i_sb, s_dev);
	k.ino = BPF_CORE_READ(host, i_ino);
	if (bpf_map_lookup_elem(&files_seen, &k))
		return;
	u8 one = 1;
	if (bpf_map_update_elem(&files_seen, &k, &one, BPF_NOEXIST) != 0)
		return;
	struct ev_file *e = reserve(sizeof(*e));
	if (!e)
		return;
	header(&e->h, EV_FILE, bpf_ktime_get_ns());
	e->pid = t->pid;
	e->tgid = k.tgid;
	e->dev = k.dev;
	e->ino = k.ino;
	e->policy = t->policy;
	e->prio = t->prio;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* A fault that dirties or reads in a file's page is a fault on that file, if
 * the task is still in it (not in a later system call that dirties or reads a
 * page, such as a write from a mapped buffer). From then on it counts as
 * under way. */
static __always_inline void name_fault_file(struct task_struct *t, struct address_space *mapping)
{
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (!s || !s->sys_start || s->sysno != CALL_PAGE_FAULT || s->ino)
		return;
	if (left_fault(t, s))
		return;
	struct inode *host = BPF_CORE_READ(mapping, host);
	if (!host)
		return;
	s->dev = BPF_CORE_READ(host, i_sb, s_dev);
	s->ino = BPF_CORE_READ(host, i_ino);
	count_in(s);
}

/* A fault that reads a file's page in (filemap_fault; the tracepoint came with
 * Linux 6.10) is a fault on that file too, so a read through a mapping that
 * waits for the device is a slow call like a read(). */
SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(on_filemap_fault, struct address_space *mapping, unsigned long index)
{
	if (file_calls && mapping)
		name_fault_file(bpf_get_current_task_btf(), mapping);
	return 0;
}

/* The process's entry in dirtiers, made (with what the task is now) when it
 * has none yet; NULL when the map is full. */
static __always_inline struct dirtier *dirtier_of(struct task_struct *t, u32 tgid, u64 now)
{
	struct dirtier *d = bpf_map_lookup_elem(&dirtiers, &tgid);
	if (d)
		return d;
	struct dirtier fresh = {};
	fresh.first_ns = now;
	fresh.last_ns = now;
	fresh.cgroup_id = bpf_get_current_cgroup_id();
	fresh.memcg_id = memcg_id(t);
	fresh.policy = t->policy;
	fresh.prio = t->prio;
	fresh.rt_priority = t->rt_priority;
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	bpf_map_update_elem(&dirtiers, &tgid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&dirtiers, &tgid);
}

/* A bio asking for a cache flush or a write through to the medium, as its
 * submitter made it: fdatasync's flush, an O_DSYNC or RWF_DSYNC direct write,
 * io_uring's fsync and FUA writes. Kernel threads (jbd2 committing for an
 * fsync, the flusher) are not counted: they act for no one process. */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(on_bio_queue, struct bio *bio)
{
	u64 durable = (1ULL << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)) |
		      (1ULL << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA));
	if (!(BPF_CORE_READ(bio, bi_opf) & durable))
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	if (t->flags & PF_KTHREAD)
		return 0;
	struct dirtier *d = dirtier_of(t, t->tgid, bpf_ktime_get_ns());
	if (d)
		__sync_fetch_and_add(&d->flushes, 1);
	return 0;
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(on_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	struct task_struct *t = bpf_get_current_task_btf();
	u32 tgid = t->tgid;
	if (per_file && mapping)
		report_file(t, mapping);
	if (file_calls && mapping)
		name_fault_file(t, mapping);
	u64 pages = folio_pages(folio);
	u64 now = bpf_ktime_get_ns();
	struct dirtier *d = bpf_map_lookup_elem(&dirtiers, &tgid);
	if (d) {
		__sync_fetch_and_add(&d->pages, pages);
		d->last_ns = now;
		return 0;
	}
	struct dirtier fresh = {};
	fresh.pages = pages;
	fresh.first_ns = now;
	fresh.last_ns = now;
	fresh.cgroup_id = bpf_get_current_cgroup_id();
	fresh.memcg_id = memcg_id(t);
	fresh.policy = t->policy;
	fresh.prio = t->prio;
	fresh.rt_priority = t->rt_priority;
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	bpf_map_update_elem(&dirtiers, &tgid, &fresh, BPF_NOEXIST);
	return 0;
}

SEC("tp_btf/bdi_dirty_ratelimit")
int BPF_PROG(on_bandwidth, struct bdi_writeback *wb, unsigned long dirty_rate,
	     unsigned long task_ratelimit)
{
	struct ev_bandwidth *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	header(&e->h, EV_BANDWIDTH, bpf_ktime_get_ns());
	e->bdi_id = BPF_CORE_READ(wb, bdi, id);
	__builtin_memset(e->name, 0, sizeof(e->name));
	bdi_name(e->name, wb);
	e->write_bw = BPF_CORE_READ(wb, write_bandwidth);
	e->avg_write_bw = BPF_CORE_READ(wb, avg_write_bandwidth);
	e->dirty_rate = dirty_rate;
	e->dirty_ratelimit = BPF_CORE_READ(wb, dirty_ratelimit);
	e->task_ratelimit = task_ratelimit;
	e->balanced_dirty_ratelimit = BPF_CORE_READ(wb, balanced_dirty_ratelimit);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/writeback_start")
int BPF_PROG(on_pass_start, struct bdi_writeback *wb, struct wb_writeback_work *work)
{
	u64 key = (u64)wb;
	struct ev_flush f = {};
	f.start = bpf_ktime_get_ns();
	f.pages = BPF_CORE_READ(work, nr_pages);
	f.avg_write_bw = BPF_CORE_READ(wb, avg_write_bandwidth);
	f.write_bw = BPF_CORE_READ(wb, write_bandwidth);
	bpf_map_update_elem(&passes, &key, &f, BPF_ANY);
	return 0;
}

SEC("tp_btf/writeback_written")
int BPF_PROG(on_pass_end, struct bdi_writeback *wb, struct wb_writeback_work *work)
{
	u64 key = (u64)wb;
	struct ev_flush *f = bpf_map_lookup_elem(&passes, &key);
	if (!f)
		return 0;
	struct ev_flush *e = reserve(sizeof(*e));
	if (e) {
		header(&e->h, EV_FLUSH, bpf_ktime_get_ns());
		e->bdi_id = BPF_CORE_READ(wb, bdi, id);
		__builtin_memset(e->name, 0, sizeof(e->name));
		bdi_name(e->name, wb);
		e->start = f->start;
		e->pages = f->pages - BPF_CORE_READ(work, nr_pages);
		e->avg_write_bw = f->avg_write_bw;
		e->write_bw = f->write_bw;
		e->reason = BPF_CORE_READ(work, reason);
		e->pad = 0;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	bpf_map_delete_elem(&passes, &key);
	return 0;
}

SEC("tp_btf/global_dirty_state")
int BPF_PROG(on_limits, unsigned long background_thresh, unsigned long dirty_thresh)
{
	u64 now = bpf_ktime_get_ns();
	if (now - last_limits_ns < 10000000)
		return 0;
	last_limits_ns = now;
	struct ev_limits *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	header(&e->h, EV_LIMITS, now);
	e->bg_thresh = background_thresh;
	e->thresh = dirty_thresh;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

#include "call_functions.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";
