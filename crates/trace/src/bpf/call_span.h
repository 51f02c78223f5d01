/* Part of writeback.bpf.c, included there in order (it uses the state, maps
 * and settings defined before it): opening and closing a watched call in the
 * task's state, and the machine-wide count of calls under way that lets the
 * scheduler's programs return at once while there are none. */

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
