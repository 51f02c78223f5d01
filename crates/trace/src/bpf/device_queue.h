/* Bytes queued at each block device: requests issued to the driver
 * (block_rq_issue) and not yet completed (block_rq_complete), reads and writes
 * apart, so a read that blocks can say what it waited behind. Loaded only for
 * `oslab stalls` (file_calls). */
#ifndef OSLAB_DEVICE_QUEUE_H
#define OSLAB_DEVICE_QUEUE_H

/* Bytes of requests issued to each block device and not yet completed
 * (file_calls only): what a read that blocks waits behind. */
struct queued {
	s64 write_bytes;
	s64 read_bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, struct queued);
} device_queue SEC(".maps");

struct issued {
	u32 dev;
	u32 write;
	u64 bytes;
};

/* Each request in flight; the least recently used are forgotten, so one
 * whose completion was never seen cannot fill the map. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct issued);
} in_flight SEC(".maps");

/* Raises *writes and *reads to the bytes queued at device `dev` now. */
static __always_inline void queued_at(u32 dev, u64 *writes, u64 *reads)
{
	struct queued *q = bpf_map_lookup_elem(&device_queue, &dev);
	if (!q)
		return;
	u64 w = q->write_bytes > 0 ? q->write_bytes : 0;
	u64 r = q->read_bytes > 0 ? q->read_bytes : 0;
	if (w > *writes)
		*writes = w;
	if (r > *reads)
		*reads = r;
}

#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1

SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_rq_issue, struct request *rq)
{
	u32 op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
	if (op != REQ_OP_READ && op != REQ_OP_WRITE)
		return 0;
	struct block_device *part = BPF_CORE_READ(rq, part);
	if (!part)
		return 0;
	struct issued i = {};
	i.dev = BPF_CORE_READ(part, bd_dev);
	i.write = op == REQ_OP_WRITE;
	i.bytes = BPF_CORE_READ(rq, __data_len);
	u64 key = (u64)rq;
	/* issued again after a requeue: counted once */
	if (bpf_map_lookup_elem(&in_flight, &key))
		return 0;
	bpf_map_update_elem(&in_flight, &key, &i, BPF_ANY);
	struct queued *q = bpf_map_lookup_elem(&device_queue, &i.dev);
	if (!q) {
		struct queued fresh = {};
		bpf_map_update_elem(&device_queue, &i.dev, &fresh, BPF_NOEXIST);
		q = bpf_map_lookup_elem(&device_queue, &i.dev);
		if (!q)
			return 0;
	}
	if (i.write)
		__sync_fetch_and_add(&q->write_bytes, i.bytes);
	else
		__sync_fetch_and_add(&q->read_bytes, i.bytes);
	return 0;
}

static __always_inline void retire(struct request *rq)
{
	u64 key = (u64)rq;
	struct issued *i = bpf_map_lookup_elem(&in_flight, &key);
	if (!i)
		return;
	struct queued *q = bpf_map_lookup_elem(&device_queue, &i->dev);
	if (q) {
		if (i->write)
			__sync_fetch_and_add(&q->write_bytes, -(s64)i->bytes);
		else
			__sync_fetch_and_add(&q->read_bytes, -(s64)i->bytes);
	}
	bpf_map_delete_elem(&in_flight, &key);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	retire(rq);
	return 0;
}

/* A request sent back to the queue leaves the device until issued again. */
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(on_rq_requeue, struct request *rq)
{
	retire(rq);
	return 0;
}

#endif
