/* What both programs share: the ring buffer, the watched processes and the lost
 * record counter the loader reads.
 *
 * Records are submitted with BPF_RB_NO_WAKEUP and the loader drains the buffer on
 * a 50 ms timer: a wake-up per record would have the reader's thread preempt the
 * very tasks being traced (a spinner pinned to one CPU saw its run cut every
 * 12 us by it). */
#ifndef OSLAB_COMMON_H
#define OSLAB_COMMON_H

u64 lost_events = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

/* Process ids (tgid) to follow; children forked later are added (on_fork). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} watched SEC(".maps");

static __always_inline bool in_watched(u32 tgid)
{
	bool hit = bpf_map_lookup_elem(&watched, &tgid) != NULL;
	/* Keeps clang from OR-ing two lookups' pointers, which the verifier refuses. */
	barrier_var(hit);
	return hit;
}

static __always_inline void *reserve(u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);
	if (!e)
		__sync_fetch_and_add(&lost_events, 1);
	return e;
}

static __always_inline void header(struct ev_header *h, u32 kind, u64 now)
{
	h->kind = kind;
	h->cpu = bpf_get_smp_processor_id();
	h->ts = now;
}

/* A watched process's children are watched too. */
static __always_inline void follow_fork(struct task_struct *parent, struct task_struct *child)
{
	u32 ptgid = parent->tgid;
	u32 ctgid = child->tgid;
	if (ptgid == ctgid || !in_watched(ptgid))
		return;
	u8 one = 1;
	bpf_map_update_elem(&watched, &ctgid, &one, BPF_ANY);
}

#endif
