/* Part of writeback.bpf.c, included there in order: a watched call's time off
 * the CPU, followed through sched_switch and sched_wakeup (or the task's own
 * run_delay) and charged to its cause (blocked.h): throttle, write-back wait,
 * other blocking (kept with its kernel stack) or the run queue. */

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
