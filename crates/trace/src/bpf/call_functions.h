/* File calls seen where the work is: programs on the entry and exit of the
 * file systems' read, write and fsync functions (ext4, XFS, btrfs, block
 * devices: fsync, fdatasync, msync with MS_SYNC, an O_SYNC write's sync) and
 * of sync_file_range, instead of sys_enter and sys_exit. A system
 * call that touches no such file (a pipe, a socket, a futex) runs none of
 * them. The call is named by the system call its task is in (the saved user
 * registers), so the records are those of the system call set: a read or write
 * the kernel makes for another call (splice, sendfile, io_uring, exec) is not
 * a watched call and is left out, as sys_enter leaves it out.
 *
 * The loader attaches these (fentry/fexit) where the kernel allows them and
 * every named function it has; elsewhere (a kernel that refuses fentry) it
 * loads the system call set. A call on a file system not named here (tmpfs,
 * NFS, ...) is seen by the system call set only. */
#ifndef OSLAB_CALL_FUNCTIONS_H
#define OSLAB_CALL_FUNCTIONS_H

static __always_inline int function_entered(struct file *f, u8 opener)
{
	struct task_struct *t = bpf_get_current_task_btf();
	/* a kernel thread (a loop device's worker) makes no system call: its
	 * saved registers are zeros */
	if ((t->flags & PF_KTHREAD) || !is_watched(t->tgid))
		return 0;
	/* as sys_enter: regular files and block devices only (an fsync of a
	 * directory, a pipe or a socket is not a file call) */
	if (file_calls && !is_file(f))
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return 0;
	long id = call_of(regs);
	if (!is_write_call(id) && !(file_calls && is_read_call(id)))
		return 0;
	long fd;
	u64 count;
	call_args(regs, id, &fd, &count);
	open_call(t, id, f, fd, count, opener);
	return 0;
}

static __always_inline int function_returned(u8 opener, long ret)
{
	if (!calls_under_way)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_state *s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (!s || !s->sys_start || s->sysno == CALL_PAGE_FAULT || s->opener != opener)
		return 0;
	end(t, s, ret, bpf_ktime_get_ns());
	return 0;
}

/* read_iter and write_iter: (struct kiocb *, struct iov_iter *) -> ssize_t */
#define ITER_FUNCTION(fn, in, out, opener)                                              \
	SEC("fentry/" #fn)                                                              \
	int BPF_PROG(in, struct kiocb *iocb)                                            \
	{                                                                               \
		return function_entered(BPF_CORE_READ(iocb, ki_filp), opener);          \
	}                                                                               \
	SEC("fexit/" #fn)                                                               \
	int BPF_PROG(out, struct kiocb *iocb, struct iov_iter *iter, long ret)          \
	{                                                                               \
		return function_returned(opener, ret);                                  \
	}

ITER_FUNCTION(ext4_file_read_iter, in_ext4_read, out_ext4_read, OPENER_READ)
ITER_FUNCTION(ext4_file_write_iter, in_ext4_write, out_ext4_write, OPENER_WRITE)
ITER_FUNCTION(xfs_file_read_iter, in_xfs_read, out_xfs_read, OPENER_READ)
ITER_FUNCTION(xfs_file_write_iter, in_xfs_write, out_xfs_write, OPENER_WRITE)
ITER_FUNCTION(btrfs_file_read_iter, in_btrfs_read, out_btrfs_read, OPENER_READ)
ITER_FUNCTION(btrfs_file_write_iter, in_btrfs_write, out_btrfs_write, OPENER_WRITE)
ITER_FUNCTION(blkdev_read_iter, in_blk_read, out_blk_read, OPENER_READ)
ITER_FUNCTION(blkdev_write_iter, in_blk_write, out_blk_write, OPENER_WRITE)

/* fsync: (struct file *, loff_t, loff_t, int datasync) -> int; the file
 * systems' own, called through f_op->fsync, so never inlined into their
 * caller as vfs_fsync_range may be (Debian's 6.1 inlines it on fdatasync's
 * path) */
#define SYNC_FUNCTION(fn, in, out)                                                      \
	SEC("fentry/" #fn)                                                              \
	int BPF_PROG(in, struct file *file)                                             \
	{                                                                               \
		return function_entered(file, OPENER_SYNC);                             \
	}                                                                               \
	SEC("fexit/" #fn)                                                               \
	int BPF_PROG(out, struct file *file, long long start, long long end_at, int datasync, \
		     int ret)                                                           \
	{                                                                               \
		return function_returned(OPENER_SYNC, ret);                             \
	}

SYNC_FUNCTION(ext4_sync_file, in_ext4_sync, out_ext4_sync)
SYNC_FUNCTION(xfs_file_fsync, in_xfs_sync, out_xfs_sync)
SYNC_FUNCTION(btrfs_sync_file, in_btrfs_sync, out_btrfs_sync)
SYNC_FUNCTION(blkdev_fsync, in_blk_sync, out_blk_sync)

/* sync_file_range(2) starts and waits for write back itself: it never reaches
 * vfs_fsync_range. */
SEC("fentry/sync_file_range")
int BPF_PROG(in_range_sync, struct file *file)
{
	return function_entered(file, OPENER_RANGE);
}

SEC("fexit/sync_file_range")
int BPF_PROG(out_range_sync, struct file *file, long long offset, long long nbytes,
	     unsigned int flags, int ret)
{
	return function_returned(OPENER_RANGE, ret);
}

#endif
