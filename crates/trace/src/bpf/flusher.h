/* Part of writeback.bpf.c, included there in order: the device's bandwidth
 * estimates (bdi_dirty_ratelimit), every flusher pass with its reason and
 * pages (writeback_start, writeback_written), and the global limits. */

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
	f.dirty_ratelimit = BPF_CORE_READ(wb, dirty_ratelimit);
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
		e->dirty_ratelimit = f->dirty_ratelimit;
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
