/* The agent's state file (publish.h). EF_AGENT_DIR is root's own (/run), and
 * the agent runs as root: the names in it are made with O_EXCL and
 * O_NOFOLLOW all the same, relative to the directory opened once. */
#define _GNU_SOURCE
#include "publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/types.h>

#include "agentstate.h"
#include "look.h"
#include "netpoll.h"
#include "proc.h"

/* The file's columns: each counter it names, the kernel's by the same name. */
static const int from_kernel[EF_AC_COUNT] = {
#define EF_AGENT_FROM(id, name) [EF_AC_##id] = EF_BC_##id,
	EF_AGENT_COUNTERS(EF_AGENT_FROM)
#undef EF_AGENT_FROM
};
_Static_assert(EF_AGENT_NBUCKETS == EF_BPF_LATE_BUCKETS, "the kernel's buckets are the file's");

static int dirfd_ = -1;
static char name[32], tmp[40];

int ef_publish_open(void)
{
	snprintf(name, sizeof(name), EF_AGENT_FILE_PREFIX "%d", (int)getpid());
	snprintf(tmp, sizeof(tmp), "." EF_AGENT_FILE_PREFIX "%d", (int)getpid());
	if ((mkdir(EF_AGENT_DIR, 0755) != 0 && errno != EEXIST) ||
	    (dirfd_ = open(EF_AGENT_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		fprintf(stderr, "epollfix agent: %s: %s: status will not show the processes served\n",
			EF_AGENT_DIR, strerror(errno));
		return -1;
	}
	/* Agents that were killed could not remove theirs; readers skip them. */
	int fd = openat(dirfd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t k = sizeof(EF_AGENT_FILE_PREFIX) - 1;
	while (d && (de = readdir(d)))
		if (strncmp(de->d_name, EF_AGENT_FILE_PREFIX, k) == 0 && ef_proc_is_pid(de->d_name + k) &&
		    strlen(de->d_name + k) < 10 && !ef_look_start(atol(de->d_name + k)))
			unlinkat(dirfd_, de->d_name, 0);
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	return 0;
}

void ef_publish_record(uint32_t tgid, const struct ef_bpf_proc *p, struct ef_agentrec *r)
{
	memset(r, 0, sizeof(*r));
	r->pid = (long)tgid;
	r->agent = (long)getpid();
	r->start = (unsigned long long)p->start;
	for (int i = 0; i < EF_AC_COUNT; i++)
		r->count[i] = p->count[from_kernel[i]];
	for (int i = 0; i < EF_AGENT_NBUCKETS; i++)
		r->late[i] = p->late[i];
	r->late_ns = p->late_ns;
}

static void line(uint32_t tgid, const struct ef_bpf_proc *p, void *arg)
{
	FILE *f = arg;
	struct ef_agentrec r;
	ef_publish_record(tgid, p, &r);
	fprintf(f, "%ld %llu", r.pid, r.start);
	for (int i = 0; i < EF_AC_COUNT; i++)
		fprintf(f, " %" PRIu64, r.count[i]);
	for (int i = 0; i < EF_AGENT_NBUCKETS; i++)
		fprintf(f, " %" PRIu64, r.late[i]);
	fprintf(f, " %" PRIu64 "\n", r.late_ns);
}

void ef_publish(struct ef_abpf *b)
{
	if (dirfd_ < 0)
		return;
	unlinkat(dirfd_, tmp, 0); /* a round that failed half-way */
	int fd = openat(dirfd_, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	fchmod(fd, 0644); /* whatever the umask: status may run as another user */
	fprintf(f, EF_AGENT_MAGIC " %d %d %llu ", EF_AGENT_FORMAT, (int)getpid(), ef_look_start(getpid()));
	for (int i = 0; i < EF_AC_COUNT; i++)
		fprintf(f, "%s%s", i ? "," : "", ef_agent_counter_name(i));
	fprintf(f, " %d\n", EF_AGENT_NBUCKETS);
	ef_abpf_each(b, line, f);
	int failed = fflush(f) != 0;
	failed = fclose(f) != 0 || failed; /* closed whatever the flush did */
	if (failed || renameat(dirfd_, tmp, dirfd_, name) != 0)
		unlinkat(dirfd_, tmp, 0);
}

void ef_publish_close(void)
{
	if (dirfd_ < 0)
		return;
	unlinkat(dirfd_, name, 0);
	close(dirfd_);
	dirfd_ = -1;
}
