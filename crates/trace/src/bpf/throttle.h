/* Part of writeback.bpf.c, included there in order: the two waits write back
 * imposes on a writer, the dirty throttle (balance_dirty_pages, each decision
 * recorded) and a wait on a page under write back (folio_wait_writeback),
 * marked so the task's next sleep is charged to them. */

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
