/* `epollfix status [PID] [--watch[=1s]] [--json]`: what libepollfix is doing in
 * running processes, read from outside. No code runs in the target: the
 * command finds the library in /proc/PID/maps, the status block's offset in
 * the section headers of that same file (live.h), and copies the block and the
 * counters it points at with process_vm_readv, which enforces the kernel's
 * ptrace rules (the command is never setuid and works around none of them).
 *
 * Rates: a one-shot look divides the counters by the time since the process
 * started (/proc/PID/stat; counters start at zero in a fork child too); with
 * --watch, each refresh gives the rates since the previous one. Nothing is
 * stored between runs. */
#define _GNU_SOURCE
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "epollfix.h"
#include "live.h"
#include "look.h"
#include "parse.h"
#include "report.h"
#include "totals.h"
#include "target.h"

/* Exit statuses, one per kind of answer (doc/epollfix.1). */
enum {
	ST_OK = 0,
	ST_USAGE = 2,
	ST_GONE = 3,     /* no such process, or it exited while being read */
	ST_PERM = 4,     /* the kernel's ptrace rules refuse the read */
	ST_NOLIB = 5,    /* libepollfix is not loaded there (or has not started) */
	ST_LAYOUT = 6,   /* another version's block, or none */
};

#define NWORDS (sizeof(struct ef_config) / sizeof(int64_t))
#define COUNTERS_BYTES (sizeof(struct ef_slot) * EF_SLOTS)


static struct ef_slot counters[2][EF_SLOTS]; /* two reads, compared (read_counters) */

static char msg[PATH_MAX + 512]; /* the one error line of the last look */

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...);

/* Fills msg and fail_code; evaluates to 0, the failure of every reader below. */
static int fail_code;
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

static double now_boot_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The start of /proc/PID/NAME, at most size - 1 bytes, NUL-terminated: the
 * bytes read, or -1 (buf then holds ""). One read: another process's file is
 * read with a bound. */
static ssize_t proc_file(long pid, const char *name, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/%s", pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? n : -1;
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks since boot; and the
 * command name. 0, or -1 when the process does not exist. */
static int proc_stat(long pid, unsigned long long *start, char *comm, size_t size)
{
	char buf[1024];
	if (proc_file(pid, "stat", buf, sizeof(buf)) < 0)
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

/* Which container the process is in, as its own people know it: its pid in
 * its pid namespace (the last field of NSpid:) and its cgroup. Read with a
 * bound, like everything of another process. */
static void proc_container(long pid, struct look *l)
{
	char buf[8192];
	proc_file(pid, "status", buf, sizeof(buf));
	char *ns = strstr(buf, "\nNSpid:");
	if (ns) {
		char *end = strchr(ns + 1, '\n'), *last = NULL;
		for (char *p = ns + 7; p && (!end || p < end); p = strpbrk(p, " \t")) {
			p += strspn(p, " \t");
			if (*p >= '0' && *p <= '9' && (!end || p < end))
				last = p;
			if (!*p)
				break;
		}
		l->ns_pid = last ? atol(last) : 0;
	}
	proc_file(pid, "cgroup", buf, sizeof(buf));
	/* "0::/path" (cgroup v2), or v1's "N:controllers:/path": the path. */
	char *colon = strchr(buf, ':');
	colon = colon ? strchr(colon + 1, ':') : NULL;
	if (colon)
		snprintf(l->cgroup, sizeof(l->cgroup), "%.*s", (int)strcspn(colon + 1, "\n"), colon + 1);
}

const char *ef_look_pwait2_word(const struct look *l)
{
	return l->pw2_state == EF_PW2_OK ? "works" : l->pw2_state == EF_PW2_NO ? "fell back" : "not probed";
}

/* The "Uid:" line of /proc/PID/status: real, effective, saved. */
static int proc_uids(long pid, unsigned uids[3])
{
	char path[64], line[256];
	int found = 0;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Uid: %u %u %u", &uids[0], &uids[1], &uids[2]) == 3;
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

static int have_cap_sys_ptrace(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
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
		struct passwd *pw = getpwuid(uids[1]);
		return FAIL(ST_PERM,
			    "process %ld belongs to %s (uid %u): reading another user's process needs "
			    "CAP_SYS_PTRACE; run `sudo epollfix status %ld`",
			    pid, pw ? pw->pw_name : "another user", uids[1], pid);
	}
	switch (scope) {
	case 1:
		return FAIL(ST_PERM,
			    "not permitted to read process %ld: /proc/sys/kernel/yama/ptrace_scope is 1, "
			    "which allows reading only the reader's own descendants; run `sudo epollfix "
			    "status %ld`, or set ptrace_scope to 0",
			    pid, pid);
	case 2:
		return FAIL(ST_PERM,
			    "not permitted to read process %ld: /proc/sys/kernel/yama/ptrace_scope is 2, "
			    "which allows only CAP_SYS_PTRACE; run `sudo epollfix status %ld`",
			    pid, pid);
	case 3:
		return FAIL(ST_PERM,
			    "not permitted to read process %ld: /proc/sys/kernel/yama/ptrace_scope is 3, "
			    "which allows no process to read another, root included, until reboot",
			    pid);
	}
	if (have_cap_sys_ptrace())
		return FAIL(ST_PERM,
			    "not permitted to read process %ld, even with CAP_SYS_PTRACE: it holds "
			    "capabilities this reader lacks, or a security module (AppArmor, SELinux) or "
			    "a parent user namespace refuses",
			    pid);
	return FAIL(ST_PERM,
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
		return FAIL(ST_GONE, "process %ld exited while being read", pid);
	return FAIL(ST_GONE, "process %ld could not be read: %s", pid, strerror(err));
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

/* Finds libepollfix in pid's maps: its path into l->lib and the mapping that
 * holds file offset want (or, with want ~0, the first one). */
static int find_library(long pid, struct look *l, unsigned long want, struct mapping *m)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? FAIL(ST_GONE, "no process %ld", pid) : read_failed(pid, errno);
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned long start, end, offset;
		int name_at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &offset, &name_at) < 3 ||
		    !name_at || line[name_at] != '/')
			continue;
		const char *name = line + name_at, *base = strrchr(name, '/') + 1;
		if (strncmp(base, "libepollfix", 11) != 0 || !strstr(base, ".so"))
			continue;
		if (l->lib[0] && strcmp(l->lib, name) != 0)
			continue;
		snprintf(l->lib, sizeof(l->lib), "%s", name);
		if (want == ~0ul || (want >= offset && want < offset + (end - start))) {
			*m = (struct mapping){ start, end, offset };
			found = 1;
		}
	}
	int err = ferror(f) ? errno : 0;
	free(line);
	fclose(f);
	if (err)
		return read_failed(pid, err);
	if (!found && !l->lib[0])
		return FAIL(ST_NOLIB, "libepollfix is not loaded in process %ld (%s)", pid, l->comm);
	if (!found)
		return FAIL(ST_LAYOUT, "the status block of %s is not mapped in process %ld", l->lib, pid);
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
		FAIL(ST_LAYOUT,
		     "%s, loaded in process %ld, was replaced or deleted on disk; reading the copy "
		     "the process loaded (/proc/%ld/map_files) needs root",
		     l->lib, pid, pid);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/root%s", pid, l->lib);
	fd = open_regular(path);
	if (fd < 0)
		read_failed(pid, errno);
	return fd;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

/* The counters, read twice: a counter only grows, so a second read smaller
 * than the first means a copy caught a word mid-update; read again. */
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
	return FAIL(ST_GONE, "process %ld: its counters kept changing under the read", pid);
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
	return FAIL(ST_GONE, "process %ld: its configuration kept changing under the read", pid);
}

/* One look at pid: 1 and *l filled, or 0 with the line in msg and fail_code. */
static int look_at(long pid, struct look *l)
{
	struct mapping m;
	uint64_t off, addr, size;
	struct ef_file e;
	uint8_t id[32];
	unsigned long long start2;

	memset(l, 0, sizeof(*l));
	l->pid = pid;
	if (proc_stat(pid, &l->start_ticks, l->comm, sizeof(l->comm)) != 0)
		return FAIL(ST_GONE, "no process %ld", pid);
	l->age_s = now_boot_s() - (double)l->start_ticks / (double)sysconf(_SC_CLK_TCK);
	proc_container(pid, l);
	if (!find_library(pid, l, ~0ul, &m))
		return 0;
	int fd = open_library(pid, l, &m);
	if (fd < 0)
		return 0;
	int elf = ef_file_open(fd, &e) == 0;
	int has_block = elf && ef_file_section(&e, EF_LIVE_SECTION, &off, &addr, &size) == 0;
	size_t id_len = elf ? ef_file_build_id(&e, id, sizeof(id)) : 0;
	close(fd);
	if (!has_block)
		return FAIL(ST_LAYOUT,
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
		return FAIL(ST_LAYOUT, "%s in process %ld has no valid status block (no magic number)",
			    l->lib, pid);
	b->version[sizeof(b->version) - 1] = '\0';
	if (b->layout != EF_LIVE_LAYOUT || b->size != sizeof(*b) || size < sizeof(*b))
		return FAIL(ST_LAYOUT,
			    "process %ld runs libepollfix %s (status layout %u); this command is "
			    "epollfix %s (status layout %d): use the epollfix command of the library's "
			    "version",
			    pid, b->version, b->layout, EPOLLFIX_VERSION, EF_LIVE_LAYOUT);
	if (!b->ready)
		return FAIL(ST_NOLIB, "libepollfix in process %ld has not finished starting; look again",
			    pid);
	if (b->self != at)
		return FAIL(ST_GONE, "process %ld changed while being read", pid);
	if (b->nslots != EF_SLOTS || b->nkeys != EF_K_COUNT || b->nwords != NWORDS ||
	    b->nsite_rows != EF_SITE_ROWS || b->site_row_size != sizeof(struct ef_site_row))
		return FAIL(ST_LAYOUT,
			    "process %ld runs libepollfix %s with %u slots of %u counters and %u "
			    "configuration words; this command (epollfix %s) knows %d, %d and %zu: use "
			    "the epollfix command of the library's version",
			    pid, b->version, b->nslots, b->nkeys, b->nwords, EPOLLFIX_VERSION, EF_SLOTS,
			    EF_K_COUNT, NWORDS);
	if (id_len != b->build_id_len || memcmp(id, b->build_id, id_len) != 0) {
		char want[65], got[65];
		hex(b->build_id, b->build_id_len < 32 ? b->build_id_len : 32, want);
		hex(id, id_len, got);
		return FAIL(ST_LAYOUT,
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
	/* The same process still, not one that reused its pid. */
	if (proc_stat(pid, &start2, NULL, 0) != 0 || start2 != l->start_ticks)
		return FAIL(ST_GONE, "process %ld exited while being read", pid);
	return 1;
}

/* ---- Output ---------------------------------------------------------------- */

/* "works", "fell back: EPERM: refused by a seccomp filter", ... */
static void pwait2_short(const struct look *l, char *out, size_t size)
{
	char text[128];
	struct ef_buf b = EF_BUF(text);

	if (l->c.disable) {
		snprintf(out, size, "%s", l->selected ? "off (EPOLLFIX_DISABLE)"
						      : "left alone (EPOLLFIX_ONLY/SKIP)");
		return;
	}
	ef_pwait2_line((enum ef_pwait2_state)l->pw2_state, l->pw2_why, &b);
	if (l->pw2_state == EF_PW2_OK)
		snprintf(out, size, "works");
	else if (l->pw2_state == EF_PW2_NO && strncmp(text, "unavailable (", 13) == 0)
		snprintf(out, size, "fell back: %.*s", (int)strlen(text) - 14, text + 13);
	else
		snprintf(out, size, "not probed yet");
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else if (*p < 0x80)
			fputc(*p, out);
		else {
			/* comm and paths are bytes: valid UTF-8 passes, anything else
			 * becomes U+FFFD, so the line stays valid JSON. */
			int n = ef_utf8_len(p);
			if (n) {
				fwrite(p, 1, (size_t)n, out);
				p += n - 1;
			} else {
				fputs("\\ufffd", out);
			}
		}
	}
	fputc('"', out);
}

/* What a rate is computed over. */
struct prev {
	long pid;
	unsigned long long start_ticks;
	uint64_t upgraded, clamped, passed;
	double at;
};

struct rates {
	double upgraded, clamped, passed, over_s;
	const char *since; /* "start" or "previous" */
};

static struct rates rates_of(const struct look *l, const struct prev *p, double now)
{
	struct rates r = { 0, 0, 0, l->age_s, "start" };
	uint64_t u = 0, c = 0, s = 0;
	if (p && p->pid == l->pid && p->start_ticks == l->start_ticks) {
		r.over_s = now - p->at;
		r.since = "previous";
		u = p->upgraded, c = p->clamped, s = p->passed;
	}
	if (r.over_s > 0.001) {
		r.upgraded = (double)(l->t.upgraded - u) / r.over_s;
		r.clamped = (double)(l->t.clamped - c) / r.over_s;
		r.passed = (double)(l->t.passed - s) / r.over_s;
	}
	return r;
}

/* A call site as the exit report names it with dladdr(3): the object's file
 * name and the exported symbol that holds the address, "libfoo.so (fn+42)".
 * From outside: the mapping in /proc/PID/maps, the symbol in that file's
 * .dynsym. */
static void site_where(long pid, uint64_t ra, const char *comm, struct ef_buf *w)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int named = 0;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	while (f && !named && getline(&line, &cap, f) > 0) {
		unsigned long start, end, offset;
		int name_at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &offset, &name_at) < 3 ||
		    ra < start || ra >= end)
			continue;
		named = 1;
		if (!name_at || line[name_at] != '/') {
			ef_fmt(w, "?");
			break;
		}
		struct look l = { .pid = pid };
		struct mapping m = { start, end, offset };
		snprintf(l.lib, sizeof(l.lib), "%s", line + name_at);
		/* dladdr names the file as it was loaded, without " (deleted)". */
		char base[PATH_MAX];
		snprintf(base, sizeof(base), "%s", strrchr(l.lib, '/') + 1);
		size_t n = strlen(base);
		if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
			base[n - 10] = '\0';
		ef_esc(w, *base ? base : comm, 0);
		int fd = open_library(pid, &l, &m);
		struct ef_file e;
		uint64_t vaddr, value;
		char sym[256];
		if (fd >= 0 && ef_file_open(fd, &e) == 0 &&
		    ef_file_vaddr_of(&e, ra - start + offset, &vaddr) == 0 &&
		    ef_file_dynsym_at(&e, vaddr, sym, sizeof(sym), &value) == 0)
			ef_fmt(ef_esc(ef_fmt(w, " ("), sym, 0), "+%" PRIu64 ")", vaddr - value);
		if (fd >= 0)
			close(fd);
	}
	if (!named)
		ef_fmt(w, "?");
	free(line);
	if (f)
		fclose(f);
}

/* A quantile's bound for JSON: -1 for the open bucket (later than any bound). */
static long long late_bound_json(uint64_t us)
{
	return us == UINT64_MAX ? -1 : (long long)us;
}

static void json_look(FILE *out, const struct look *l, const struct rates *r)
{
	char id[65], pw[128], rts[128] = "";
	struct ef_buf pwb = EF_BUF(pw);
	const struct ef_totals *t = &l->t;

	hex(l->block.build_id, l->block.build_id_len < 32 ? l->block.build_id_len : 32, id);
	ef_pwait2_line((enum ef_pwait2_state)l->pw2_state, l->pw2_why, &pwb);
	fprintf(out, "{\"pid\":%ld,\"program\":", l->pid);
	json_str(out, l->comm);
	fputs(",\"library\":", out);
	json_str(out, l->lib);
	fputs(",\"version\":", out);
	json_str(out, l->block.version);
	fprintf(out, ",\"build_id\":\"%s\",\"layout\":%u,\"acting\":%s,\"epoll_pwait2\":{\"state\":\"%s\","
		     "\"text\":",
		id, l->block.layout, l->selected && !l->c.disable ? "true" : "false",
		ef_look_pwait2_word(l));
	json_str(out, pw);
	fprintf(out, ",\"errno\":%d}", l->pw2_state == EF_PW2_NO ? l->pw2_why : 0);
	fprintf(out,
		",\"calls\":{\"epoll_wait\":%llu,\"epoll_pwait\":%llu},\"by_timeout\":{\"negative\":%llu,"
		"\"zero\":%llu,\"one_ms\":%llu,\"up_to_max\":%llu,\"longer\":%llu},\"upgraded\":%llu,"
		"\"clamped\":%llu,\"passed\":%llu,\"fell_back\":%llu,\"left_alone_genuine\":%llu,"
		"\"empty_zero_polls\":%llu,\"longest_empty_streak\":%llu,\"learned_genuine\":%llu,"
		"\"learned_subms\":%llu,\"retries\":%llu",
		(unsigned long long)t->calls[EF_CALL_WAIT], (unsigned long long)t->calls[EF_CALL_PWAIT],
		(unsigned long long)t->by_class[EF_T_NEGATIVE], (unsigned long long)t->by_class[EF_T_ZERO],
		(unsigned long long)t->by_class[EF_T_ONE_MS], (unsigned long long)t->by_class[EF_T_UP_TO_MAX],
		(unsigned long long)t->by_class[EF_T_LONGER], (unsigned long long)t->upgraded,
		(unsigned long long)t->clamped, (unsigned long long)t->passed,
		(unsigned long long)t->fell_back, (unsigned long long)t->genuine,
		(unsigned long long)t->empty_zero, (unsigned long long)t->longest_streak,
		(unsigned long long)t->learned_genuine, (unsigned long long)t->learned_subms,
		(unsigned long long)t->retries);
	uint64_t late_n = 0;
	for (unsigned b = 0; b < EF_LATE_BUCKETS; b++)
		late_n += t->late[b];
	fprintf(out,
		",\"hinted\":%llu,\"hint_stale\":%llu,\"rationed\":%llu,\"threads\":%llu,\"threads_shared\":%llu,"
		"\"late\":{\"waits\":%llu,\"p50_us\":%lld,\"p99_us\":%lld,\"mean_us\":%llu},"
		"\"ns_pid\":%ld,\"cgroup\":",
		(unsigned long long)t->hinted, (unsigned long long)t->hint_stale,
		(unsigned long long)t->rationed, (unsigned long long)t->threads, (unsigned long long)t->threads_shared,
		(unsigned long long)late_n, late_bound_json(ef_late_quantile_us(t, 500)),
		late_bound_json(ef_late_quantile_us(t, 990)),
		(unsigned long long)(late_n ? t->late_ns / late_n / 1000 : 0), l->ns_pid);
	json_str(out, l->cgroup);
	fprintf(out,
		",\"rates\":{\"since\":\"%s\",\"seconds\":%.3f,\"upgraded\":%.1f,\"clamped\":%.1f,"
		"\"passed\":%.1f}",
		r->since, r->over_s, r->upgraded, r->clamped, r->passed);
	struct ef_buf rb = EF_BUF(rts);
	ef_runtimes_text(l->runtimes, &rb);
	fputs(",\"runtimes\":[", out);
	for (char *p = rts, *save = NULL, *w; (w = strtok_r(p, ",", &save)); p = NULL) {
		fputs(p ? "" : ",", out);
		json_str(out, w + (*w == ' '));
	}
	fputs("],\"sites\":[", out);
	for (unsigned i = 0; i < EF_SITE_ROWS; i++) {
		const struct ef_site_view *row = &l->sites[i];
		uint64_t ra = (uint64_t)(uintptr_t)row->ra;
		unsigned f = row->flags;
		char where[512];
		struct ef_buf w = EF_BUF(where);
		if (!ra)
			break;
		site_where(l->pid, ra, l->comm, &w);
		fputs(i ? ",{\"where\":" : "{\"where\":", out);
		json_str(out, where);
		fprintf(out,
			",\"upgraded\":%llu,\"deadlines\":%llu,\"left_alone\":%llu,\"recognised\":%s,"
			"\"runs_end\":%s,\"endless\":%s,\"sub_ms_seen\":%s,\"backed_off\":%s}",
			(unsigned long long)row->c[EF_SC_UPGRADED], (unsigned long long)row->c[EF_SC_RUNS],
			(unsigned long long)row->c[EF_SC_ALONE],
			f & EF_SF_RECOGNISED ? "true" : "false", f & EF_SF_ENDS ? "true" : "false",
			f & EF_SF_ENDLESS ? "true" : "false", f & EF_SF_PROVEN ? "true" : "false",
			f & EF_SF_BACKED_OFF ? "true" : "false");
	}
	fputs("],\"policy\":{", out);
	/* The published words; the text settings (stats, only, skip) stay with
	 * the process, as in the report's policy line. */
	for (size_t i = 0, n = 0; i < ef_nvars; i++) {
		char v[64];
		struct ef_buf vb = EF_BUF(v);
		if (ef_vars[i].kind == EF_KIND_TEXT)
			continue;
		ef_config_show(ef_config_get(&l->c, &ef_vars[i]), &ef_vars[i], &vb);
		fputs(n++ ? "," : "", out);
		json_str(out, ef_vars[i].name);
		fputc(':', out);
		json_str(out, v);
	}
	fputs("}}\n", out);
}

static void rate_text(double r, char *out, size_t size)
{
	snprintf(out, size, r >= 100 || r == 0 ? "%.0f" : "%.1f", r);
}

static void header(FILE *out)
{
	fprintf(out, "%7s %-15s %-8s %10s %8s %10s %8s %10s %8s %13s  %s\n", "PID", "PROGRAM",
		"VERSION", "UPGRADED", "/s", "CLAMPED", "/s", "PASSED", "/s", "LATE p50/p99", "EPOLL_PWAIT2");
}

static void one_line(FILE *out, const struct look *l, const struct rates *r)
{
	char pw[160], ru[32], rc[32], rp[32], name[128], version[64];
	struct ef_buf nb = EF_BUF(name), vb = EF_BUF(version);
	/* What the process says of itself, escaped and cut to its column. */
	ef_esc(&nb, l->comm, 15);
	ef_esc(&vb, l->block.version, 8);
	pwait2_short(l, pw, sizeof(pw));
	rate_text(r->upgraded, ru, sizeof(ru));
	rate_text(r->clamped, rc, sizeof(rc));
	rate_text(r->passed, rp, sizeof(rp));
	/* How late the timed waits came back: bucket bounds, "32/64us". */
	char late[48];
	uint64_t p50 = ef_late_quantile_us(&l->t, 500), p99 = ef_late_quantile_us(&l->t, 990);
	if (!p50)
		snprintf(late, sizeof(late), "-");
	else if (p99 == UINT64_MAX)
		snprintf(late, sizeof(late), "%llu/more", (unsigned long long)p50);
	else
		snprintf(late, sizeof(late), "%llu/%lluus", (unsigned long long)p50, (unsigned long long)p99);
	fprintf(out, "%7ld %s %s %10llu %8s %10llu %8s %10llu %8s %13s  %s\n", l->pid, name,
		version, (unsigned long long)l->t.upgraded, ru,
		(unsigned long long)l->t.clamped, rc, (unsigned long long)l->t.passed, rp, late, pw);
}

/* The exit report's text, from the shared formatter, and what only a live
 * look has: the library and the rates. */
static void full_report(FILE *out, const struct look *l, const struct rates *r)
{
	char text[8192], pw[256], rts[128] = "", id[65], ru[32], rc[32], rp[32], comm[128];
	char lib[PATH_MAX * 4 + 1], version[64];
	struct ef_buf b = EF_BUF(text), pwb = EF_BUF(pw), rb = EF_BUF(rts), cb = EF_BUF(comm);
	struct ef_buf lb = EF_BUF(lib), vb = EF_BUF(version);

	ef_esc(&cb, l->comm, 0);
	ef_esc(&lb, l->lib, 0);
	ef_esc(&vb, l->block.version, 0);
	ef_pwait2_line((enum ef_pwait2_state)l->pw2_state, l->pw2_why, &pwb);
	ef_runtimes_text(l->runtimes, &rb);
	ef_stats_format(&l->t, &l->c, l->pid, comm, pw, rts, &b);
	for (unsigned i = 0; i < EF_SITE_ROWS; i++) {
		uint64_t ra = (uint64_t)(uintptr_t)l->sites[i].ra;
		char where[512];
		struct ef_buf w = EF_BUF(where);
		if (!ra)
			break;
		site_where(l->pid, ra, l->comm, &w);
		ef_stats_format_site(&l->sites[i], &l->c, l->pid, where, &b);
	}
	fputs(text, out);
	hex(l->block.build_id, l->block.build_id_len < 32 ? l->block.build_id_len : 32, id);
	fprintf(out, "epollfix[%ld] library: %s %s (build %s)\n", l->pid, version, lib, id);
	if (l->ns_pid || l->cgroup[0]) {
		char cg[sizeof(l->cgroup) * 4];
		struct ef_buf cgb = EF_BUF(cg);
		ef_esc(&cgb, l->cgroup[0] ? l->cgroup : "?", 0);
		fprintf(out, "epollfix[%ld] container: pid %ld in its namespace, cgroup %s\n", l->pid,
			l->ns_pid, cg);
	}
	rate_text(r->upgraded, ru, sizeof(ru));
	rate_text(r->clamped, rc, sizeof(rc));
	rate_text(r->passed, rp, sizeof(rp));
	fprintf(out, "epollfix[%ld] rates: upgraded %s/s, clamped %s/s, passed %s/s (%s %.1fs)\n",
		l->pid, ru, rc, rp, strcmp(r->since, "start") == 0 ? "since the start," : "over the last",
		r->over_s);
}

/* ---- Commands ---------------------------------------------------------------- */

static int usage(FILE *out)
{
	fprintf(out,
		"usage: epollfix status [--json | --metrics | --textfile=DIR] [--watch[=1s]] [PID]\n\n"
		"Without PID: one line for each process with libepollfix loaded that you may read.\n"
		"With PID: the report the process would print at exit (EPOLLFIX_STATS), now.\n"
		"Rates are per second since the process started, or with --watch since the previous\n"
		"refresh. --json: one JSON object per process and line. --metrics: Prometheus's\n"
		"text format; --textfile=DIR: the same into DIR/epollfix.prom, replaced whole\n"
		"(node_exporter's textfile collector).\n"
		"Exit status: 0; 2 usage; 3 no such process; 4 not permitted; 5 libepollfix not\n"
		"loaded there; 6 a libepollfix of another version or layout.\n");
	return out == stdout ? 0 : ST_USAGE;
}

static int is_number(const char *s);

/* Every process whose look succeeds (pid 0: all of /proc), for --metrics. */
static size_t collect(long pid, struct look **out)
{
	size_t n = 0, cap = 0;
	struct look *ls = NULL;
	DIR *d = pid ? NULL : opendir("/proc");
	struct dirent *de = NULL;
	long self = (long)getpid();

	while (pid ? !n && !cap : d && (de = readdir(d))) {
		long p = pid ? pid : is_number(de->d_name) ? atol(de->d_name) : 0;
		if (pid)
			cap = 1; /* one pass */
		if (!p || p == self)
			continue;
		if (n == cap || !ls) {
			size_t want = cap ? cap * 2 : 8;
			struct look *more = realloc(ls, want * sizeof(*ls));
			if (!more)
				break;
			ls = more, cap = want;
		}
		if (look_at(p, &ls[n]))
			n++;
		else if (pid)
			fprintf(stderr, "epollfix: status: %s\n", msg);
	}
	if (d)
		closedir(d);
	*out = ls;
	return n;
}

/* The metrics to stdout, or to DIR/epollfix.prom through a file in the same
 * directory renamed over it: a scrape never sees half a file. 0, or -1. */
static int write_metrics(const char *dir, const struct look *ls, size_t n)
{
	if (!dir) {
		ef_metrics_write(stdout, ls, n);
		return 0;
	}
	char tmp[PATH_MAX], final[PATH_MAX];
	snprintf(final, sizeof(final), "%s/epollfix.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s/.epollfix.prom.%ld", dir, (long)getpid());
	FILE *f = fopen(tmp, "we");
	if (!f) {
		fprintf(stderr, "epollfix: status: %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	ef_metrics_write(f, ls, n);
	int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
	if (fclose(f) != 0 || bad || rename(tmp, final) != 0) {
		fprintf(stderr, "epollfix: status: %s: %s\n", final, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static struct prev *prevs;
static size_t nprev;

static const struct prev *prev_of(long pid)
{
	for (size_t i = 0; i < nprev; i++)
		if (prevs[i].pid == pid)
			return &prevs[i];
	return NULL;
}

static void remember(struct prev *next, size_t *n, const struct look *l, double now)
{
	next[(*n)++] = (struct prev){ l->pid, l->start_ticks, l->t.upgraded, l->t.clamped,
				      l->t.passed, now };
}

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Every process listed in /proc, one line (or object) each for those running
 * libepollfix; returns the number shown. */
static int list_all(int json, int watching, struct prev *next, size_t *nnext, size_t next_cap)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int shown = 0, refused = 0;
	long self = (long)getpid();
	struct look l;

	if (!d) {
		fprintf(stderr, "epollfix: status: /proc: %s\n", strerror(errno));
		return -1;
	}
	double now = now_boot_s();
	while ((de = readdir(d))) {
		if (!is_number(de->d_name))
			continue;
		long pid = atol(de->d_name);
		if (pid == self)
			continue;
		if (!look_at(pid, &l)) {
			/* Only processes whose maps show the library and that then refused. */
			if (fail_code == ST_PERM && l.lib[0])
				refused++;
			else if (fail_code == ST_LAYOUT || (fail_code == ST_NOLIB && l.lib[0]))
				fprintf(stderr, "epollfix: status: %s\n", msg);
			continue;
		}
		struct rates r = rates_of(&l, watching ? prev_of(pid) : NULL, now);
		if (json) {
			json_look(stdout, &l, &r);
		} else {
			if (!shown)
				header(stdout);
			one_line(stdout, &l, &r);
		}
		if (*nnext < next_cap)
			remember(next, nnext, &l, now);
		shown++;
	}
	closedir(d);
	if (!json && !shown)
		printf("no process with libepollfix loaded%s\n",
		       geteuid() == 0 ? "" : " that you may read (other users' need root)");
	else if (!json)
		printf(nprev ? "rates: per second since the previous look (for a process new since then: since it started)\n"
			     : "rates: per second since each process started\n");
	if (refused)
		fprintf(stderr,
			"epollfix: status: %d more process%s with libepollfix could not be read "
			"(not permitted: `epollfix status PID` says why)\n",
			refused, refused == 1 ? "" : "es");
	return shown;
}

static size_t count_proc(void)
{
	size_t n = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += is_number(de->d_name);
	if (d)
		closedir(d);
	return n;
}

int ef_status_main(int argc, char **argv)
{
	int json = 0, watch = 0, metrics = 0;
	const char *textfile = NULL;
	int64_t every_ns = 1000000000;
	long pid = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return usage(stdout);
		if (strcmp(a, "--json") == 0) {
			json = 1;
		} else if (strcmp(a, "--metrics") == 0) {
			metrics = 1;
		} else if (strncmp(a, "--textfile=", 11) == 0 && a[11]) {
			metrics = 1;
			textfile = a + 11;
		} else if (strcmp(a, "--watch") == 0) {
			watch = 1;
		} else if (strncmp(a, "--watch=", 8) == 0) {
			watch = 1;
			enum ef_parse_err err = ef_parse_duration(a + 8, 10000000, 3600 * 1000000000LL,
								  &every_ns);
			if (err != EF_PARSE_OK) {
				fprintf(stderr, "epollfix: status: --watch='%s' %s (10ms to 1h)\n", a + 8,
					ef_parse_strerror(err, 1));
				return ST_USAGE;
			}
		} else if (is_number(a) && !pid && strlen(a) < 10 && atol(a) > 0) {
			pid = atol(a);
		} else {
			fprintf(stderr, "epollfix: status: unexpected '%s'\n", a);
			return usage(stderr);
		}
	}
	if (metrics && json) {
		fprintf(stderr, "epollfix: status: --json and --metrics are two formats: one of them\n");
		return ST_USAGE;
	}
	for (; metrics;) {
		struct look *ls;
		size_t n = collect(pid, &ls);
		int r = pid && !n ? fail_code : write_metrics(textfile, ls, n) ? 1 : ST_OK;
		free(ls);
		if (!watch || r != ST_OK || fflush(stdout) != 0)
			return r;
		struct timespec d = { every_ns / 1000000000, every_ns % 1000000000 };
		nanosleep(&d, NULL);
	}
	/* A pipe closed by the reader (`| head`) ends --watch quietly. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	int tty = isatty(STDOUT_FILENO);
	for (int round = 0;; round++) {
		size_t cap = pid ? 1 : count_proc() + 64, n = 0;
		struct prev *next = calloc(cap, sizeof(*next));
		if (!next) {
			perror("epollfix: status");
			return 1;
		}
		if (watch && tty && !json)
			fputs("\033[H\033[2J", stdout);
		if (pid) {
			struct look l;
			if (!look_at(pid, &l)) {
				fprintf(stderr, "epollfix: status: %s\n", msg);
				free(next);
				free(prevs);
				return fail_code;
			}
			double now = now_boot_s();
			struct rates r = rates_of(&l, watch ? prev_of(pid) : NULL, now);
			if (json)
				json_look(stdout, &l, &r);
			else
				full_report(stdout, &l, &r);
			remember(next, &n, &l, now);
		} else if (list_all(json, watch, next, &n, cap) < 0) {
			free(next);
			return 1;
		}
		free(prevs);
		prevs = next, nprev = n;
		if (!watch)
			break;
		if (!json && !tty)
			putchar('\n');
		if (fflush(stdout) != 0 || ferror(stdout))
			break;
		struct timespec d = { every_ns / 1000000000, every_ns % 1000000000 };
		nanosleep(&d, NULL);
	}
	free(prevs);
	return ST_OK;
}
