/* The few kernel types oslab's programs read, declared by hand.
 *
 * Every struct carries preserve_access_index, so each field access is a CO-RE
 * relocation that libbpf resolves against the running kernel's BTF
 * (/sys/kernel/btf/vmlinux) at load time: only the fields named here must exist
 * and their offsets come from the kernel, not from this file. That is why no
 * vmlinux.h generated from the build machine's kernel is needed. Fields that
 * came or went between kernel versions are read behind bpf_core_field_exists().
 */
#ifndef OSLAB_KERNEL_H
#define OSLAB_KERNEL_H

#include <linux/types.h>
#include <linux/bpf.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0
typedef int pid_t;
typedef __u32 dev_t;

#define OSLAB_CORE __attribute__((preserve_access_index))

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long r10;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long sp;
} OSLAB_CORE;
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
	__u64 regs[31];
} OSLAB_CORE;
struct pt_regs {
	union {
		struct user_pt_regs user_regs;
		struct {
			__u64 regs[31];
		};
	};
	__u64 orig_x0;
	int syscallno;
} OSLAB_CORE;
#endif

/* CONFIG_SCHED_INFO: the time the task has waited runnable for a CPU, added
 * when it is switched in (sched_info_arrive). */
struct sched_info {
	unsigned long long run_delay;
} OSLAB_CORE;

struct task_struct {
	unsigned int __state;
	unsigned int flags;
	int prio;
	int static_prio;
	unsigned int rt_priority;
	unsigned int policy;
	pid_t pid;
	pid_t tgid;
	char comm[16];
	int nr_dirtied;
	int nr_dirtied_pause;
	unsigned long dirty_paused_when;
	struct files_struct *files;
	struct css_set *cgroups;
	struct sched_info sched_info;
} OSLAB_CORE;

struct backing_dev_info {
	u64 id;
	char dev_name[64];
} OSLAB_CORE;

struct bdi_writeback {
	struct backing_dev_info *bdi;
	unsigned long write_bandwidth;
	unsigned long avg_write_bandwidth;
	unsigned long dirty_ratelimit;
	unsigned long balanced_dirty_ratelimit;
} OSLAB_CORE;

/* 6.x: balance_dirty_pages' tracepoint passes this instead of its figures. */
struct dirty_throttle_control {
	unsigned long avail;
	unsigned long dirty;
	unsigned long thresh;
	unsigned long bg_thresh;
	unsigned long limit;
	unsigned long wb_dirty;
	unsigned long wb_thresh;
	unsigned long wb_bg_thresh;
	unsigned long pos_ratio;
} OSLAB_CORE;

enum wb_reason {
	WB_REASON_BACKGROUND,
};

struct wb_writeback_work {
	long nr_pages;
	enum wb_reason reason;
} OSLAB_CORE;

struct super_block {
	dev_t s_dev;
} OSLAB_CORE;

struct inode {
	unsigned short i_mode;
	dev_t i_rdev;
	struct super_block *i_sb;
	unsigned long i_ino;
} OSLAB_CORE;

struct qstr {
	const unsigned char *name;
} OSLAB_CORE;

struct dentry {
	struct qstr d_name;
} OSLAB_CORE;

struct path {
	struct dentry *dentry;
} OSLAB_CORE;

struct file {
	struct path f_path;
	struct inode *f_inode;
} OSLAB_CORE;

/* A read or write in progress: the file systems' read_iter and write_iter
 * take it. */
struct kiocb {
	struct file *ki_filp;
} OSLAB_CORE;

struct iov_iter;

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} OSLAB_CORE;

struct files_struct {
	struct fdtable *fdt;
} OSLAB_CORE;

struct block_device {
	dev_t bd_dev;
} OSLAB_CORE;

/* A bio's operation and flags (blk_opf_t, u32 since 6.0). */
struct bio {
	unsigned int bi_opf;
} OSLAB_CORE;

/* The bits of a request's flags; their numbers differ between releases and are
 * read from the running kernel's BTF (bpf_core_enum_value). */
enum req_flag_bits {
	__REQ_FUA = 0,
	__REQ_PREFLUSH = 1,
};

/* task_struct.flags: a kernel thread (jbd2, the flusher, kworkers). */
#define PF_KTHREAD 0x00200000

struct request {
	unsigned int cmd_flags;
	unsigned int __data_len;
	struct block_device *part;
} OSLAB_CORE;

struct kernfs_node {
	u64 id;
} OSLAB_CORE;

struct cgroup {
	struct kernfs_node *kn;
} OSLAB_CORE;

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} OSLAB_CORE;

struct css_set {
	struct cgroup_subsys_state *subsys[16];
} OSLAB_CORE;

enum cgroup_subsys_id {
	memory_cgrp_id = 4,
	CGROUP_SUBSYS_COUNT = 16,
};

struct address_space {
	struct inode *host;
} OSLAB_CORE;

/* Only what the size of a folio needs: the head flag in the first word and, in
 * the second page, the page count (6.x) or the order (older). */
struct folio {
	unsigned long _flags_1;
	unsigned int _nr_pages;
} OSLAB_CORE;

enum pageflags {
	PG_head = 6,
};

#endif
