/* Part of writeback.bpf.c, included there in order: a watched call's stretch
 * off the CPU charged to its cause (throttle, write-back wait, other blocking,
 * kept with its kernel stack, or the run queue). offcpu.h follows the
 * stretches through the scheduler; a call's end (call_span.h) settles the last
 * one. */

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

