/* The processes a running agent serves, from its state file (agentlook.h).
 * The file is root's, written by the agent; it is still read as hostile
 * input: a file anyone else may write, or larger than an agent can write, is
 * not read; a line is taken only whole, with exactly its numbers; a process
 * only while it is the one the agent attached. */
#define _GNU_SOURCE
#include "agentlook.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentstate.h"
#include "look.h"
#include "parse.h"
#include "proc.h"
#include "totals.h"

_Static_assert(EF_AGENT_NBUCKETS == EF_LATE_BUCKETS, "the agent's lateness buckets are the library's");

/* A line: the pid, its start, the counters (at most MAX_COLUMNS: an agent
 * of another version may name more), the buckets, the sum; at most 20 digits
 * a number and one blank between; at most MAX_PROCS lines (the kernel side's
 * bound, src/bpf/netpoll.h, with room). */
#define MAX_COLUMNS 64
#define MAX_FIELDS (2 + MAX_COLUMNS + EF_AGENT_NBUCKETS + 1)
#define MAX_PROCS 8192
#define MAX_FILE ((size_t)(MAX_PROCS + 1) * MAX_FIELDS * 21)

/* The numbers of one line, NUL-terminated (the newline replaced): how many,
 * or -1 when one is not a number. */
static int numbers(char *line, int64_t *out, int max)
{
	int n = 0;
	for (char *save = NULL, *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (n == max || ef_parse_int(tok, 0, INT64_MAX, &out[n]) != EF_PARSE_OK)
			return -1;
		n++;
	}
	return n;
}

/* The file, when it may be trusted to be an agent's: the bytes, NUL-ended. */
static char *read_state(int dirfd, const char *name, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || (size_t)st.st_size > MAX_FILE ||
	    !(buf = malloc((size_t)st.st_size + 1)))
		goto done;
	size_t n = 0;
	ssize_t r = 1;
	while (r > 0 && n < (size_t)st.st_size) {
		r = read(fd, buf + n, (size_t)st.st_size - n);
		n += r > 0 ? (size_t)r : 0;
	}
	buf[n] = '\0';
	*len = n;
done:
	close(fd);
	return buf;
}

/* The header's list of counter names: which of ours each column is (-1:
 * one this command does not know). The number of columns, or -1. */
static int columns(char *names, int *col)
{
	int n = 0;
	for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_COLUMNS)
			return -1;
		col[n] = -1;
		for (int i = 0; i < EF_AC_COUNT; i++)
			if (strcmp(tok, ef_agent_counter_name(i)) == 0)
				col[n] = i;
		n++;
	}
	return n;
}

/* One agent's file: fn for each process of it that only selects. */
static int one_agent(char *buf, size_t len, long only, void (*fn)(const struct ef_agentrec *, void *),
		     void *arg)
{
	int64_t v[MAX_FIELDS];
	int col[MAX_COLUMNS];
	char *nl = memchr(buf, '\n', len), *names, *after;
	size_t magic = sizeof(EF_AGENT_MAGIC) - 1;
	if (!nl || len < magic + 1 || memcmp(buf, EF_AGENT_MAGIC " ", magic + 1) != 0)
		return 0;
	*nl = '\0';
	/* The header: format, the agent's pid and start, the names, the buckets. */
	char *h = buf + magic + 1, *save = NULL;
	char *format = strtok_r(h, " ", &save), *pid = strtok_r(NULL, " ", &save);
	char *start = strtok_r(NULL, " ", &save);
	names = strtok_r(NULL, " ", &save);
	after = strtok_r(NULL, "", &save);
	int ncol = names ? columns(names, col) : -1;
	if (!format || !pid || !start || !after || ncol <= 0 ||
	    ef_parse_int(format, EF_AGENT_FORMAT, EF_AGENT_FORMAT, &v[0]) != EF_PARSE_OK ||
	    ef_parse_int(pid, 1, INT32_MAX, &v[1]) != EF_PARSE_OK ||
	    ef_parse_int(start, 0, INT64_MAX, &v[2]) != EF_PARSE_OK ||
	    ef_parse_int(after, EF_AGENT_NBUCKETS, EF_AGENT_NBUCKETS, &v[3]) != EF_PARSE_OK ||
	    ef_look_start(v[1]) != (unsigned long long)v[2])
		return 0; /* another format's, or its writer is gone: stale */
	long agent = (long)v[1];
	int fields = 2 + ncol + EF_AGENT_NBUCKETS + 1;
	int found = 0;
	for (char *line = nl + 1; line < buf + len;) {
		char *end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			break; /* a line cut: not taken */
		*end = '\0';
		struct ef_agentrec r;
		memset(&r, 0, sizeof(r));
		if (numbers(line, v, fields) == fields && v[0] > 0 &&
		    (!only || only == v[0] || only == agent) &&
		    ef_look_start(v[0]) == (unsigned long long)v[1]) {
			r.pid = (long)v[0];
			r.agent = agent;
			r.start = (unsigned long long)v[1];
			for (int i = 0; i < ncol; i++)
				if (col[i] >= 0)
					r.count[col[i]] = (uint64_t)v[2 + i];
			for (int i = 0; i < EF_AGENT_NBUCKETS; i++)
				r.late[i] = (uint64_t)v[2 + ncol + i];
			r.late_ns = (uint64_t)v[fields - 1];
			fn(&r, arg);
			found++;
		}
		line = end + 1;
	}
	return found;
}

int ef_agentlook_each(long only, void (*fn)(const struct ef_agentrec *r, void *arg), void *arg)
{
	DIR *d = opendir(EF_AGENT_DIR);
	struct dirent *de;
	int found = 0;
	size_t k = sizeof(EF_AGENT_FILE_PREFIX) - 1;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, EF_AGENT_FILE_PREFIX, k) != 0 || !ef_proc_is_pid(de->d_name + k))
			continue;
		size_t len = 0;
		char *buf = read_state(dirfd(d), de->d_name, &len);
		if (buf)
			found += one_agent(buf, len, only, fn, arg);
		free(buf);
	}
	if (d)
		closedir(d);
	return found;
}

void ef_agent_report(const struct ef_agentrec *r, struct ef_buf *b)
{
	const uint64_t *c = r->count;
	struct ef_totals t;
	memset(&t, 0, sizeof(t));
	memcpy(t.late, r->late, sizeof(t.late));
	uint64_t p50 = ef_late_quantile_us(&t, 500), p99 = ef_late_quantile_us(&t, 990);
	ef_fmt(b, "epollfix[%ld] Go, served by the agent (pid %ld): %" PRIu64 " netpoll waits, %" PRIu64
		  " timers set at the runtime's deadline, %" PRIu64 " waits ended",
	       r->pid, r->agent, c[EF_AC_WAITS], c[EF_AC_ARMED], c[EF_AC_ENDED]);
	if (p50 && p99 != UINT64_MAX)
		ef_fmt(b, ", late p50 <= %" PRIu64 " us, p99 <= %" PRIu64 " us", p50, p99);
	else if (p50)
		ef_fmt(b, ", late p50 <= %" PRIu64 " us, p99 over %u us", p50, 1u << (EF_AGENT_NBUCKETS - 2));
	ef_fmt(b, "; fell back: %" PRIu64 " other fd, %" PRIu64 " not polling, %" PRIu64
		  " out of range, %" PRIu64 " repeated, %" PRIu64 " unreadable, %" PRIu64
		  " full; timers that found: %" PRIu64 " stale, %" PRIu64 " awake, %" PRIu64
		  " detached, %" PRIu64 " busy\n",
	       c[EF_AC_OTHER_FD], c[EF_AC_NOT_POLLING], c[EF_AC_OUT_OF_RANGE], c[EF_AC_REPEATED],
	       c[EF_AC_UNREADABLE], c[EF_AC_FULL], c[EF_AC_STALE], c[EF_AC_AWAKE], c[EF_AC_DETACHED],
	       c[EF_AC_BUSY]);
}
