/* Part of writeback.bpf.c, included there in order: who dirties what. Pages
 * dirtied per process (writeback_dirty_folio), the files they belong to, the
 * file a fault reads in or dirties, and the bios a process submits asking for
 * a cache flush or a write through (its durable writes, as the block layer
 * sees them). */

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
