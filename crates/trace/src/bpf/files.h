/* What a call's file and its caller's cgroup are, read from the kernel's
 * structures (CO-RE, kernel.h). */
#ifndef OSLAB_FILES_H
#define OSLAB_FILES_H

/* The task's file at descriptor fd. The table is walked with direct loads
 * (the verifier turns them into fault-safe loads, far cheaper than a helper
 * call each); only the array slot, indexed by a value the verifier cannot
 * bound, is read with bpf_probe_read_kernel. This runs on every read and write
 * system call on the machine, pipes and sockets included. */
static __always_inline struct file *fd_file(struct task_struct *t, long fd)
{
	if (fd < 0)
		return NULL;
	struct files_struct *files = t->files;
	if (!files)
		return NULL;
	struct fdtable *fdt = files->fdt;
	if (!fdt || fd >= fdt->max_fds)
		return NULL;
	struct file **fds = fdt->fd;
	struct file *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

#define S_IFMT 00170000
#define S_IFREG 0100000
#define S_IFBLK 0060000

/* Whether the file is a regular file or a block device (not a pipe, socket
 * or terminal). */
static __always_inline bool is_file(struct file *f)
{
	if (!f)
		return false;
	unsigned short fmt = BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;
	return fmt == S_IFREG || fmt == S_IFBLK;
}

/* The file's device, inode and name (its last path component, FILE_NAME_LEN
 * bytes); zeros where there is none. */
static __always_inline void file_identity(struct file *f, u64 *dev, u64 *ino, char *fname)
{
	*dev = 0;
	*ino = 0;
	fname[0] = 0;
	if (!f)
		return;
	const unsigned char *name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	if (name)
		bpf_probe_read_kernel_str(fname, FILE_NAME_LEN, name);
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	if (!inode)
		return;
	/* a block device is its own device, not its pseudo file system's */
	unsigned short fmt = BPF_CORE_READ(inode, i_mode) & S_IFMT;
	*dev = fmt == S_IFBLK ? BPF_CORE_READ(inode, i_rdev) : BPF_CORE_READ(inode, i_sb, s_dev);
	*ino = BPF_CORE_READ(inode, i_ino);
}

/* The memory cgroup's id: a v1 memory hierarchy's directory or the v2 one. */
static __always_inline u64 memcg_id(struct task_struct *t)
{
	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return 0;
	int i = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	if (i < 0 || i >= 16)
		return 0;
	struct css_set *cs = BPF_CORE_READ(t, cgroups);
	struct cgroup_subsys_state *css = NULL;
	bpf_core_read(&css, sizeof(css), &cs->subsys[i]);
	if (!css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

#endif
