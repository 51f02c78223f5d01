/* Part of writeback.bpf.c, included there in order: watched calls opened and
 * ended by the system call tracepoints (the set a kernel that refuses fentry
 * gets), and page faults on files' pages, opened at the fault and closed when
 * the task is seen out of it. */

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
