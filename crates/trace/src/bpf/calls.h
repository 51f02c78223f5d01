/* Which system calls the write-back program watches, by this architecture's
 * numbers (the Rust side names them in src/decode.rs). */
#ifndef OSLAB_CALLS_H
#define OSLAB_CALLS_H

static __always_inline bool is_write_call(long id)
{
#if defined(__TARGET_ARCH_x86)
	/* write, msync, writev, pwrite64, fsync, fdatasync, sync_file_range,
	 * pwritev, pwritev2 */
	return id == 1 || id == 26 || id == 20 || id == 18 || id == 74 ||
	       id == 75 || id == 277 || id == 296 || id == 328;
#elif defined(__TARGET_ARCH_arm64)
	/* write, writev, pwrite64, pwritev, sync_file_range, fsync, fdatasync,
	 * msync, pwritev2 */
	return id == 64 || id == 66 || id == 68 || id == 70 || id == 84 ||
	       id == 82 || id == 83 || id == 227 || id == 287;
#else
	return false;
#endif
}

static __always_inline bool is_read_call(long id)
{
#if defined(__TARGET_ARCH_x86)
	/* read, pread64, readv, preadv, preadv2 */
	return id == 0 || id == 17 || id == 19 || id == 295 || id == 327;
#elif defined(__TARGET_ARCH_arm64)
	/* read, readv, pread64, preadv, preadv2 */
	return id == 63 || id == 65 || id == 67 || id == 69 || id == 286;
#else
	return false;
#endif
}

/* msync takes an address, every other watched call a file descriptor. */
static __always_inline bool takes_fd(long id)
{
#if defined(__TARGET_ARCH_x86)
	return id != 26;
#elif defined(__TARGET_ARCH_arm64)
	return id != 227;
#else
	return true;
#endif
}

/* Calls whose third argument counts iovecs, not bytes. */
static __always_inline bool is_vectored(long id)
{
#if defined(__TARGET_ARCH_x86)
	/* readv, writev, preadv, pwritev, preadv2, pwritev2 */
	return id == 19 || id == 20 || id == 295 || id == 296 || id == 327 || id == 328;
#elif defined(__TARGET_ARCH_arm64)
	return id == 65 || id == 66 || id == 69 || id == 70 || id == 286 || id == 287;
#else
	return false;
#endif
}

/* The system call a task is in, from its saved user registers (-1 outside
 * one): what a program on a kernel function names the call by. */
static __always_inline long call_of(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return (long)regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	return regs->syscallno;
#else
	return -1;
#endif
}

/* A watched call's descriptor (-1 for msync, which names an address) and
 * bytes: the third argument of reads, writes and sync_file_range, the second
 * of msync (its length); fsync and fdatasync name none, and the vectored
 * calls give an iovec count, so their bytes are what they return (0 here). */
static __always_inline void call_args(struct pt_regs *regs, long id, long *fd, u64 *count)
{
	*fd = -1;
	*count = 0;
#if defined(__TARGET_ARCH_x86)
	*fd = (s32)regs->di;
	*count = id == 26 ? regs->si : regs->dx;
	if (id == 74 || id == 75)
		*count = 0;
#elif defined(__TARGET_ARCH_arm64)
	*fd = (s32)regs->regs[0];
	*count = id == 227 ? regs->regs[1] : regs->regs[2];
	if (id == 82 || id == 83)
		*count = 0;
#endif
	if (!takes_fd(id))
		*fd = -1;
	if (is_vectored(id))
		*count = 0;
}

#endif
