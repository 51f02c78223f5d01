// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* The scheduler's own account of watched processes: every switch into or out
 * of one of their threads and every wake-up (with_events), and per thread the
 * switches counted the way getrusage() counts them: voluntary when the thread
 * left the CPU blocked, involuntary when it was preempted or yielded while
 * runnable (kernel/sched/core.c __schedule: nvcsw unless preempted or
 * TASK_RUNNING).
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "common.h"

const volatile bool with_events = false;

struct counts {
	u64 voluntary;
	u64 involuntary;
	u64 run_ns;
	u64 on_since;
};

/* Per thread id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct counts);
} switches SEC(".maps");

static __always_inline struct counts *counts_of(u32 pid)
{
	struct counts *c = bpf_map_lookup_elem(&switches, &pid);
	if (c)
		return c;
	struct counts zero = {};
	bpf_map_update_elem(&switches, &pid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&switches, &pid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u64 now = bpf_ktime_get_ns();
	bool prev_w = in_watched(prev->tgid);
	bool next_w = in_watched(next->tgid);
	if (!prev_w && !next_w)
		return 0;
	if (prev_w) {
		struct counts *c = counts_of(prev->pid);
		if (c) {
			if (!preempt && prev_state != 0)
				c->voluntary++;
			else
				c->involuntary++;
			if (c->on_since) {
				c->run_ns += now - c->on_since;
				c->on_since = 0;
			}
		}
	}
	if (next_w) {
		struct counts *c = counts_of(next->pid);
		if (c)
			c->on_since = now;
	}
	if (!with_events)
		return 0;
	struct ev_switch *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	header(&e->h, EV_SWITCH, now);
	e->prev_pid = prev->pid;
	e->prev_tgid = prev->tgid;
	e->next_pid = next->pid;
	e->next_tgid = next->tgid;
	e->prev_prio = prev->prio;
	e->next_prio = next->prio;
	e->prev_state = prev_state;
	e->preempt = preempt;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline void wakeup(struct task_struct *p)
{
	if (!with_events || !in_watched(p->tgid))
		return;
	struct ev_wakeup *e = reserve(sizeof(*e));
	if (!e)
		return;
	header(&e->h, EV_WAKEUP, bpf_ktime_get_ns());
	e->pid = p->pid;
	e->tgid = p->tgid;
	e->prio = p->prio;
	e->target_cpu = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	wakeup(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	wakeup(p);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	follow_fork(parent, child);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
