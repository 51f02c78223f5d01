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

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (s)
		close_fault(t, s);
	return 0;
}
