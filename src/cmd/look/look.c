/* One look at a running process from outside: the reading half of `epollfix
 * status` (show.c shows what it reads). No code runs in the target: the
 * library is found in /proc/PID/maps, the status block's offset in the section
 * headers of that same file (live.h), and the block and the counters it points
 * at are copied with process_vm_readv, which enforces the kernel's ptrace rules
 * (the command is never setuid and works around none of them). Everything read
 * here is the other process's, and hostile: every length is bounded, every
 * string escaped before it is shown. */
#define _GNU_SOURCE
#include "look.h"
#include "maps.h"
#include "walkas.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "epollfix.h"
#include "ids.h"
#include "proc.h"
#include "target.h"

#define NWORDS (sizeof(struct ef_config) / sizeof(int64_t))
#define COUNTERS_BYTES (sizeof(struct ef_slot) * EF_SLOTS)


static struct ef_slot counters[2][EF_SLOTS]; /* two reads, compared (read_counters) */

static char msg[PATH_MAX + 512]; /* the one error line of the last look */

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...);

/* Fills msg and fail_code; evaluates to 0, the failure of every reader below. */
static int fail_code;

int ef_look_failure(const char **why)
{
	*why = msg;
	return fail_code;
}

#define FAIL(code, ...) (fail_code = (code), fail(__VA_ARGS__))

/* The message names what the process shows (its name, its library's path
 * and version): the whole line goes through the one escaper, so nothing of
 * it reaches the terminal raw. */
static int fail(const char *fmt, ...)
{
	char raw[sizeof(msg)];
	struct ef_buf b = EF_BUF(msg);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	ef_esc(&b, raw, 0);
	return 0;
}

double ef_look_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks since boot; and the
 * command name. 0, or -1 when the process does not exist. */
static int proc_stat(long pid, unsigned long long *start, char *comm, size_t size)
{
	char buf[1024];
	if (ef_proc_read(pid, "stat", buf, sizeof(buf)) < 0)
		return -1;
	/* comm is in parentheses and may hold anything, spaces and ')' too. */
	char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p)
		return -1;
	if (comm)
		snprintf(comm, size, "%.*s", (int)(close_p - open_p - 1), open_p + 1);
	char *p = close_p + 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return -1;
	*start = strtoull(p, NULL, 10);
	return 0;
}

/* /proc/PID/NAME read to its end, or to size - 1 bytes: the bytes read, or -1. */
static ssize_t read_whole(long pid, const char *name, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/%s", pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t r = fd >= 0 ? 1 : -1;
	while (r > 0 && n + 1 < size) {
		r = read(fd, buf + n, size - 1 - n);
		n += r > 0 ? (size_t)r : 0;
	}
	if (fd >= 0)
		close(fd);
	buf[n] = '\0';
	return r < 0 && !n ? -1 : (ssize_t)n;
}

/* Which container the process is in, as its own people know it: its pid in
 * its pid namespace (the last field of NSpid:, wherever in the file it lies)
 * and its cgroup, with the pod that names (pod.h). Read with a bound, like
 * everything of another process: a line of /proc/PID/cgroup holds a path of
 * up to PATH_MAX bytes, one line for each hierarchy. */
static void proc_container(long pid, long *ns_pid, char *cgroup, size_t size, struct ef_pod *pod)
{
	static char buf[32 * (PATH_MAX + 64)];
	char nspid[512];
	struct ef_proc_field f;
	ef_proc_field_init(&f, "NSpid", nspid, sizeof(nspid));
	ef_proc_fields_via(syscall, pid, "status", &f, 1);
	/* A value cut at the bound would end in a partial pid: none then. */
	if (f.len && f.len + 1 < sizeof(nspid)) {
		const char *last = nspid + f.len;
		while (last > nspid && last[-1] >= '0' && last[-1] <= '9')
			last--;
		if (*last)
			*ns_pid = atol(last);
	}
	ssize_t n = read_whole(pid, "cgroup", buf, sizeof(buf));
	/* The pod and its names: the node's word (pod.h), never the
	 * process's. */
	if (ef_pod_from_cgroups(pid, buf, n > 0 ? (size_t)n : 0, pod, cgroup, size))
		ef_pod_node_names(pod);
}

unsigned long long ef_look_start(long pid)
{
	unsigned long long start;
	return proc_stat(pid, &start, NULL, 0) == 0 ? start : 0;
}

int ef_look_who(long pid, struct ef_who *w)
{
	unsigned long long start2;
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	if (proc_stat(pid, &w->start_ticks, w->comm, sizeof(w->comm)) != 0)
		return 0;
	proc_container(pid, &w->ns_pid, w->cgroup, sizeof(w->cgroup), &w->pod);
	return proc_stat(pid, &start2, NULL, 0) == 0 && start2 == w->start_ticks;
}

const char *ef_look_lib_word(const struct look *l)
{
	static const char *const words[] = { "unknown", "loaded", "missing", "static", "not_loaded" };
	return words[l->lib_state <= EF_LIB_NOT_LOADED ? l->lib_state : 0];
}

const char *ef_look_lib_why(const struct look *l)
{
	switch (l->lib_state) {
	case EF_LIB_MISSING:
		return "no such file, as the process sees its file system";
	case EF_LIB_STATIC:
		return "the program is statically linked, so no loader reads LD_PRELOAD";
	case EF_LIB_NOT_LOADED:
		return "the loader did not load it (a build for another libc, or secure execution)";
	default:
		return "";
	}
}

const char *ef_look_pwait2_word(const struct look *l)
{
	return l->pw2_state == EF_PW2_OK ? "works" : l->pw2_state == EF_PW2_NO ? "fell back" : "not probed";
}

/* The "Uid:" line of /proc/PID/status: real, effective, saved. */
static int proc_uids(long pid, unsigned uids[3])
{
	char v[128];
	struct ef_proc_field f;
	ef_proc_field_init(&f, "Uid", v, sizeof(v));
	ef_proc_fields_via(syscall, pid, "status", &f, 1);
	return sscanf(v, "%u %u %u", &uids[0], &uids[1], &uids[2]) == 3 ? 0 : -1;
}

static int have_cap_sys_ptrace(void)
{
	char v[64];
	unsigned long long eff = 0;
	struct ef_proc_field f;
	ef_proc_field_init(&f, "CapEff", v, sizeof(v));
	ef_proc_fields_via(syscall, 0, "status", &f, 1);
	if (sscanf(v, "%llx", &eff) != 1)
		eff = 0;
	return (eff >> 19) & 1; /* CAP_SYS_PTRACE */
}

static int ptrace_scope(void)
{
	int scope = -1;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f && fscanf(f, "%d", &scope) != 1)
		scope = -1;
	if (f)
		fclose(f);
	return scope;
}

/* The rule that refused reading pid, and what would work: one line in msg. */
static int not_permitted(long pid)
{
	unsigned uids[3];
	uid_t me = getuid();
	int scope = ptrace_scope();

	if (proc_uids(pid, uids) == 0 && (uids[0] != me || uids[1] != me || uids[2] != me) &&
	    !have_cap_sys_ptrace()) {
		char user[64];
		if (ef_user_name(uids[1], user, sizeof(user)) != 0)
			snprintf(user, sizeof(user), "another user");
		return FAIL(EF_ST_PERM,
			    "process %ld belongs to %s (uid %u): reading another user's process needs "
			    "CAP_SYS_PTRACE; run `sudo epollfix status %ld`",
			    pid, user, uids[1], pid);
	}
	switch (scope) {
	case 1:
		return FAIL(EF_ST_PERM,
			    "not permitted to read process %ld: /proc/sys/kernel/yama/ptrace_scope is 1, "
			    "which allows reading only the reader's own descendants; run `sudo epollfix "
			    "status %ld`, or set ptrace_scope to 0",
			    pid, pid);
	case 2:
		return FAIL(EF_ST_PERM,
			    "not permitted to read process %ld: /proc/sys/kernel/yama/ptrace_scope is 2, "
			    "which allows only CAP_SYS_PTRACE; run `sudo epollfix status %ld`",
			    pid, pid);
	case 3:
		return FAIL(EF_ST_PERM,
			    "not permitted to read process %ld: /proc/sys/kernel/yama/ptrace_scope is 3, "
			    "which allows no process to read another, root included, until reboot",
			    pid);
	}
	if (have_cap_sys_ptrace())
		return FAIL(EF_ST_PERM,
			    "not permitted to read process %ld, even with CAP_SYS_PTRACE: it holds "
			    "capabilities this reader lacks, or a security module (AppArmor, SELinux) or "
			    "a parent user namespace refuses",
			    pid);
	return FAIL(EF_ST_PERM,
		    "not permitted to read process %ld: it is not dumpable (it changed credentials, "
		    "or called prctl(PR_SET_DUMPABLE, 0)) or a security module refuses; run `sudo "
		    "epollfix status %ld`",
		    pid, pid);
}

/* An error of process_vm_readv, or of opening a file in /proc/PID, as a line. */
static int read_failed(long pid, int err)
{
	if (err == EPERM || err == EACCES)
		return not_permitted(pid);
	if (err == ESRCH || err == ENOENT || err == EFAULT)
		return FAIL(EF_ST_GONE, "process %ld exited while being read", pid);
	return FAIL(EF_ST_GONE, "process %ld could not be read: %s", pid, strerror(err));
}

static int vm_read(long pid, struct iovec *local, struct iovec *remote, unsigned n)
{
	size_t want = 0;
	for (unsigned i = 0; i < n; i++)
		want += remote[i].iov_len;
	ssize_t r = process_vm_readv((pid_t)pid, local, n, remote, n, 0);
	if (r == (ssize_t)want)
		return 1;
	return r < 0 ? read_failed(pid, errno) : read_failed(pid, EFAULT);
}

#define IOV(p, n) ((struct iovec){ .iov_base = (void *)(uintptr_t)(p), .iov_len = (n) })

/* A mapping of the library file, from /proc/PID/maps. */
struct mapping {
	unsigned long start, end, offset;
};

struct library_search {
	struct look *l;
	unsigned long want;
	struct mapping *m;
};

static int library_line(const struct ef_map_line *line, void *arg)
{
	struct library_search *s = arg;
	const char *name = line->name, *base = strrchr(name, '/');
	if (name[0] != '/' || strncmp(++base, "libepollfix", 11) != 0 || !strstr(base, ".so"))
		return 0;
	if (s->l->lib[0] && strcmp(s->l->lib, name) != 0)
		return 0;
	snprintf(s->l->lib, sizeof(s->l->lib), "%s", name);
	if (s->want != ~0ul && (s->want < line->offset || s->want >= line->offset + (line->end - line->start)))
		return 0;
	*s->m = (struct mapping){ line->start, line->end, line->offset };
	return 1;
}

/* Finds libepollfix in pid's maps: its path into l->lib and the mapping that
 * holds file offset want (or, with want ~0, the first one). */
static int find_library(long pid, struct look *l, unsigned long want, struct mapping *m)
{
	struct library_search s = { l, want, m };
	int found = ef_maps_each(pid, library_line, &s);
	if (found < 0)
		return errno == ENOENT ? FAIL(EF_ST_GONE, "no process %ld", pid) : read_failed(pid, errno);
	if (!found && !l->lib[0])
		return FAIL(EF_ST_NOLIB, "libepollfix is not loaded in process %ld (%s)", pid, l->comm);
	if (!found)
		return FAIL(EF_ST_LAYOUT, "the status block of %s is not mapped in process %ld", l->lib, pid);
	return 1;
}

/* A file the process names, opened never to block (a FIFO in its place) and
 * kept only when it is a regular file: -1 otherwise, errno set. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* The library file as the process mapped it: /proc/PID/map_files works for a
 * deleted or replaced file but needs CAP_SYS_ADMIN; /proc/PID/root/PATH works
 * in containers and for the same user. */
static int open_library(long pid, const struct look *l, const struct mapping *m)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "/proc/%ld/map_files/%lx-%lx", pid, m->start, m->end);
	int fd = open_regular(path);
	if (fd >= 0)
		return fd;
	size_t n = strlen(l->lib);
	static const char deleted[] = " (deleted)";
	if (n > sizeof(deleted) - 1 && strcmp(l->lib + n - (sizeof(deleted) - 1), deleted) == 0) {
		FAIL(EF_ST_LAYOUT,
		     "%s, loaded in process %ld, was replaced or deleted on disk; reading the copy "
		     "the process loaded (/proc/%ld/map_files) needs root",
		     l->lib, pid, pid);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/root%s", pid, l->lib);
	fd = open_regular(path);
	if (fd < 0 && errno == EINVAL)
		FAIL(EF_ST_LAYOUT, "%s, as process %ld sees it, is not a regular file: not read", l->lib,
		     pid);
	else if (fd < 0)
		read_failed(pid, errno);
	return fd;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

/* The counters, read twice: the library only ever adds to a counter, so a
 * second read smaller than the first means the process is not what it says
 * (or a copy caught a word mid-update): read again. A guard: it never fires
 * on a library of this version. */
static int read_counters(long pid, const struct look *l)
{
	for (int tries = 0; tries < 8; tries++) {
		for (int k = 0; k < 2; k++) {
			struct iovec local = IOV(counters[k], COUNTERS_BYTES),
				     remote = IOV(l->block.slots, COUNTERS_BYTES);
			if (!vm_read(pid, &local, &remote, 1))
				return 0;
		}
		const uint64_t *a = (const uint64_t *)counters[0], *b = (const uint64_t *)counters[1];
		size_t i = 0, n = COUNTERS_BYTES / sizeof(uint64_t);
		while (i < n && b[i] >= a[i])
			i++;
		if (i == n)
			return 1;
	}
	return FAIL(EF_ST_GONE, "process %ld: its counters kept changing under the read", pid);
}

/* The configuration under its seqlock, as the library reads it. */
static int read_config(long pid, struct look *l)
{
	int64_t w[NWORDS];
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1, s2;
		struct iovec local[3] = { IOV(&s1, 8), IOV(w, sizeof(w)), IOV(&s2, 8) };
		struct iovec remote[3] = { IOV(l->block.config_seq, 8),
					   IOV(l->block.config_words, sizeof(w)),
					   IOV(l->block.config_seq, 8) };
		if (!vm_read(pid, local, remote, 3))
			return 0;
		if (s1 == s2 && !(s1 & 1)) {
			memcpy(&l->c, w, sizeof(w));
			return 1;
		}
		if (tries > 10)
			usleep(100);
	}
	return FAIL(EF_ST_GONE, "process %ld: its configuration kept changing under the read", pid);
}

/* Whether the program pid runs has no PT_INTERP: no loader runs in it. */
static int runs_static(long pid)
{
	char path[64];
	struct ef_file e;
	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	int fd = open_regular(path);
	int is_static = fd >= 0 && ef_file_open(fd, &e) == 0 && ef_file_interp(&e) == 0;
	if (fd >= 0)
		close(fd);
	return is_static;
}

/* A process without the library mapped: when its LD_PRELOAD names one, the
 * look holds who it is and why the library is not there (look.h). Its
 * environment is the process's own: read with a bound (pod.h), like
 * everything else of it. */
static void unloaded(long pid, struct look *l)
{
	struct ef_pod_env env;
	unsigned long long start2;

	if (ef_pod_env_of(pid, &env) != 0 || !env.preload[0])
		return;
	proc_container(pid, &l->ns_pid, l->cgroup, sizeof(l->cgroup), &l->pod);
	snprintf(l->lib, sizeof(l->lib), "%s", env.preload);
	/* The file as the process would find it (a name without a slash is
	 * searched for by the loader: not judged). */
	int is_static = runs_static(pid);
	int err = is_static || l->lib[0] != '/' ? 0 : ef_walk_as(pid, l->lib);
	l->lib_state = is_static ? EF_LIB_STATIC
		       : err == ENOENT || err == ENOTDIR ? EF_LIB_MISSING
							 : EF_LIB_NOT_LOADED;
	if (proc_stat(pid, &start2, NULL, 0) != 0 || start2 != l->start_ticks) {
		l->lib_state = EF_LIB_UNKNOWN;
		FAIL(EF_ST_GONE, "process %ld exited while being read", pid);
		return;
	}
	FAIL(EF_ST_NOLIB, "libepollfix is not loaded in process %ld (%s), though its LD_PRELOAD names %s: %s",
	     pid, l->comm, l->lib, ef_look_lib_why(l));
}

int ef_look_at(long pid, struct look *l)
{
	struct mapping m;
	uint64_t off, addr, size;
	struct ef_file e;
	uint8_t id[32];
	unsigned long long start2;

	memset(l, 0, sizeof(*l));
	l->pid = pid;
	if (proc_stat(pid, &l->start_ticks, l->comm, sizeof(l->comm)) != 0)
		return FAIL(EF_ST_GONE, "no process %ld", pid);
	l->age_s = ef_look_now() - (double)l->start_ticks / (double)sysconf(_SC_CLK_TCK);
	if (!find_library(pid, l, ~0ul, &m)) {
		if (fail_code == EF_ST_NOLIB && !l->lib[0])
			unloaded(pid, l);
		return 0;
	}
	proc_container(pid, &l->ns_pid, l->cgroup, sizeof(l->cgroup), &l->pod);
	int fd = open_library(pid, l, &m);
	if (fd < 0)
		return 0;
	int elf = ef_file_open(fd, &e) == 0;
	int has_block = elf && ef_file_section(&e, EF_LIVE_SECTION, &off, &addr, &size) == 0;
	size_t id_len = elf ? ef_file_build_id(&e, id, sizeof(id)) : 0;
	close(fd);
	if (!has_block)
		return FAIL(EF_ST_LAYOUT,
			    "%s in process %ld has no status block: a libepollfix older than `epollfix "
			    "status`; this command is %s (status layout %d)",
			    l->lib, pid, EPOLLFIX_VERSION, EF_LIVE_LAYOUT);
	if (!find_library(pid, l, (unsigned long)off, &m))
		return 0;
	uint64_t at = m.start + (off - m.offset);

	/* Magic and layout first: their places never change. */
	struct ef_live *b = &l->block;
	struct iovec local = IOV(b, size < sizeof(*b) ? size : sizeof(*b)), remote = IOV(at, local.iov_len);
	if (!vm_read(pid, &local, &remote, 1))
		return 0;
	if (memcmp(b->magic, EF_LIVE_MAGIC, sizeof(EF_LIVE_MAGIC)) != 0)
		return FAIL(EF_ST_LAYOUT, "%s in process %ld has no valid status block (no magic number)",
			    l->lib, pid);
	b->version[sizeof(b->version) - 1] = '\0';
	if (b->layout != EF_LIVE_LAYOUT || b->size != sizeof(*b) || size < sizeof(*b))
		return FAIL(EF_ST_LAYOUT,
			    "process %ld runs libepollfix %s (status layout %u); this command is "
			    "epollfix %s (status layout %d): use the epollfix command of the library's "
			    "version",
			    pid, b->version, b->layout, EPOLLFIX_VERSION, EF_LIVE_LAYOUT);
	if (!b->ready)
		return FAIL(EF_ST_NOLIB, "libepollfix in process %ld has not finished starting; look again",
			    pid);
	if (b->self != at)
		return FAIL(EF_ST_GONE, "process %ld changed while being read", pid);
	if (b->nslots != EF_SLOTS || b->nkeys != EF_K_COUNT || b->nwords != NWORDS ||
	    b->nsite_rows != EF_SITE_ROWS || b->site_row_size != sizeof(struct ef_site_row))
		return FAIL(EF_ST_LAYOUT,
			    "process %ld runs libepollfix %s with %u slots of %u counters and %u "
			    "configuration words; this command (epollfix %s) knows %d, %d and %zu: use "
			    "the epollfix command of the library's version",
			    pid, b->version, b->nslots, b->nkeys, b->nwords, EPOLLFIX_VERSION, EF_SLOTS,
			    EF_K_COUNT, NWORDS);
	if (id_len != b->build_id_len || memcmp(id, b->build_id, id_len) != 0) {
		char want[65], got[65];
		hex(b->build_id, b->build_id_len < 32 ? b->build_id_len : 32, want);
		hex(id, id_len, got);
		return FAIL(EF_ST_LAYOUT,
			    "process %ld runs libepollfix %s build %s, but %s is build %s (replaced on "
			    "disk since it was loaded?)",
			    pid, b->version, want, l->lib, got[0] ? got : "without an id");
	}
	if (!read_counters(pid, l) || !read_config(pid, l))
		return 0;
	ef_stats_sum_slots(counters[1], EF_SLOTS, &l->t);
	struct iovec lv[4] = { IOV(&l->selected, 4), IOV(&l->pw2_state, 4), IOV(&l->pw2_why, 4),
			       IOV(&l->runtimes, 4) };
	struct iovec rv[4] = { IOV(b->selected, 4), IOV(b->pwait2_state, 4), IOV(b->pwait2_why, 4),
			       IOV(b->runtimes, 4) };
	if (!vm_read(pid, lv, rv, 4))
		return 0;
	struct iovec ls = IOV(l->rows, sizeof(l->rows)), rs = IOV(b->site_rows, sizeof(l->rows));
	if (!vm_read(pid, &ls, &rs, 1))
		return 0;
	ef_site_views(l->rows, counters[1], EF_SLOTS, l->sites);
	hex(b->build_id, b->build_id_len < 32 ? b->build_id_len : 32, l->build_id);
	/* The same process still, not one that reused its pid. */
	if (proc_stat(pid, &start2, NULL, 0) != 0 || start2 != l->start_ticks)
		return FAIL(EF_ST_GONE, "process %ld exited while being read", pid);
	l->lib_state = EF_LIB_LOADED;
	return 1;
}


/* The mapping and file of each call site, found in one walk of the maps. */
static struct site_file {
	struct mapping m;
	char name[PATH_MAX];
} site_files[EF_SITE_ROWS];

struct site_search {
	const struct look *l;
	unsigned want, found; /* sites to place, and placed */
};

static int site_line(const struct ef_map_line *line, void *arg)
{
	struct site_search *s = arg;
	for (unsigned i = 0; i < s->want; i++) {
		uint64_t ra = (uint64_t)(uintptr_t)s->l->sites[i].ra;
		if (site_files[i].name[0] || ra < line->start || ra >= line->end)
			continue;
		site_files[i].m = (struct mapping){ line->start, line->end, line->offset };
		snprintf(site_files[i].name, sizeof(site_files[i].name), "%s", line->name);
		s->found++;
	}
	return s->found == s->want;
}

/* Names site i, of a file already opened as e (or not: fd < 0), as dladdr(3)
 * would: the file's base name and the .dynsym symbol holding the address. */
static void site_name(struct look *l, unsigned i, int fd, const struct ef_file *e)
{
	const struct site_file *f = &site_files[i];
	uint64_t ra = (uint64_t)(uintptr_t)l->sites[i].ra, vaddr, value;
	struct ef_buf w = EF_BUF(l->where[i]);
	if (f->name[0] != '/') {
		ef_fmt(&w, "?");
		return;
	}
	/* dladdr names the file as it was loaded, without " (deleted)". */
	char base[PATH_MAX], sym[256];
	snprintf(base, sizeof(base), "%s", strrchr(f->name, '/') + 1);
	size_t n = strlen(base);
	if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
		base[n - 10] = '\0';
	ef_esc(&w, *base ? base : l->comm, 0);
	if (fd >= 0 && ef_file_vaddr_of(e, ra - f->m.start + f->m.offset, &vaddr) == 0 &&
	    ef_file_dynsym_at(e, vaddr, sym, sizeof(sym), &value) == 0)
		ef_fmt(ef_esc(ef_fmt(&w, " ("), sym, 0), "+%" PRIu64 ")", vaddr - value);
}

/* Each call site as the exit report names it with dladdr(3), "libfoo.so
 * (fn+42)", from outside: its mapping in /proc/PID/maps (one walk for all
 * sites), the symbol in that file's .dynsym (each file opened once). */
void ef_look_name_sites(struct look *l)
{
	struct site_search s = { .l = l };
	while (s.want < EF_SITE_ROWS && l->sites[s.want].ra)
		s.want++;
	memset(site_files, 0, sizeof(site_files));
	memset(l->where, 0, sizeof(l->where));
	if (s.want && ef_maps_each(l->pid, site_line, &s) < 0)
		s.want = 0; /* the process is gone: every site "?" */
	for (unsigned i = 0; i < EF_SITE_ROWS && l->sites[i].ra; i++) {
		if (l->where[i][0])
			continue; /* named with an earlier site of its file */
		int fd = -1;
		struct ef_file e = { .fd = -1 };
		if (i < s.want && site_files[i].name[0] == '/') {
			struct look as = { .pid = l->pid };
			snprintf(as.lib, sizeof(as.lib), "%s", site_files[i].name);
			fd = open_library(l->pid, &as, &site_files[i].m);
			if (fd >= 0 && ef_file_open(fd, &e) != 0) {
				close(fd);
				fd = -1;
			}
		}
		for (unsigned j = i; j < EF_SITE_ROWS && l->sites[j].ra; j++)
			if (j == i || (site_files[i].name[0] == '/' &&
				       strcmp(site_files[j].name, site_files[i].name) == 0))
				site_name(l, j, fd, &e);
		if (fd >= 0)
			close(fd);
	}
}
