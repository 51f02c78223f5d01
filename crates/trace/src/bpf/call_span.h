/* Part of writeback.bpf.c, included there in order (it uses the state, maps
 * and settings defined before it): opening and closing a watched call in the
 * task's state (a page fault closed once the task is seen out of it), the
 * event of a call that ends, and the machine-wide count of calls under way
 * that lets the scheduler's programs return at once while there are none. */

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

static __always_inline void finish(struct task_state *s)
{
	s->sys_start = 0;
	if (s->counted) {
		s->counted = 0;
		__sync_fetch_and_sub(&calls_under_way, 1);
	}
}

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
