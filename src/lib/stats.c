#define _GNU_SOURCE
#include "stats.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "real.h"
#include "recognize.h"
#include "report.h"
#include "sandbox.h"
#include "state.h"
#include "wait_path.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

/* ---- Where the slots live -----------------------------------------------------
 * A child made with its own copy of memory by a call that runs no atfork
 * handler (libc's clone, a raw clone or clone3 system call) would keep its
 * parent's counts. The slots live in memory the kernel gives such a child
 * zeroed (MADV_WIPEONFORK, Linux 4.14): its counts start at zero without the
 * library running any code in it, where the stack may be 256 bytes and the
 * thread pointer the program's own. A word beside them, set in the process
 * that made them, says so: such a child reads 0, and learns that it is new
 * where it next enters the library off the fast path (ef_stats_new_process).
 * Without the mapping (mmap refused) or the advice (a kernel before 4.14), the
 * slots are static, and such a child keeps its parent's counts. */
struct wiped {
	_Atomic int made_here;
	struct ef_slot slots[EF_SLOTS] __attribute__((aligned(64)));
};
static struct wiped unwiped;
static _Atomic(struct wiped *) wiped_at;

/* Made at the first claim of a slot (or read of them), before any slot is
 * handed out; two threads that race keep the first one's. mmap and madvise
 * are async-signal-safe, and allocate nothing of libc's. */
static struct wiped *wiped(void)
{
	struct wiped *w = atomic_load_explicit(&wiped_at, memory_order_acquire);
	if (__builtin_expect(w != NULL, 1))
		return w;
	int saved = errno;
	struct wiped *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
	if (m == MAP_FAILED) {
		m = &unwiped;
	} else if (madvise(m, sizeof(*m), MADV_WIPEONFORK) != 0) {
		munmap(m, sizeof(*m));
		m = &unwiped;
	}
	errno = saved;
	atomic_store_explicit(&m->made_here, 1, memory_order_relaxed);
	if (atomic_compare_exchange_strong_explicit(&wiped_at, &w, m, memory_order_acq_rel,
						    memory_order_acquire))
		w = m;
	else if (m != &unwiped)
		munmap(m, sizeof(*m));
	/* Every thread that made or saw them: the same value. */
	atomic_store_explicit(&ef_stats_slots, w->slots, memory_order_relaxed);
	return w;
}

struct ef_slot *ef_stats_all(void)
{
	return wiped()->slots;
}

int ef_stats_new_process(void)
{
	struct wiped *w = atomic_load_explicit(&wiped_at, memory_order_acquire);
	return w && __builtin_expect(!atomic_load_explicit(&w->made_here, memory_order_relaxed), 0) &&
	       !atomic_exchange_explicit(&w->made_here, 1, memory_order_relaxed);
}

static _Atomic unsigned slots_taken;
/* Slots given back, a bit each: a claim clears the bit it takes, so no two
 * threads take one slot, and nothing waits. */
#define FREE_WORDS ((EF_SLOTS + 63) / 64)
static _Atomic uint64_t slots_free[FREE_WORDS];

static struct ef_slot *taken(struct ef_slot *all, unsigned i)
{
	struct ef_slot *s = &all[i];
	if (!ef_stats_shared(s)) /* a streak of the thread before is not this one's */
		atomic_store_explicit(&s->c[EF_K_STREAK_MARK], ef_slot_empty_polls(s),
				      memory_order_relaxed);
	ef_stats_add(s, EF_K_THREADS);
	return s;
}

struct ef_slot *ef_stats_claim(void)
{
	struct ef_slot *all = ef_stats_all();
	if (atomic_load_explicit(&slots_taken, memory_order_relaxed) < EF_SLOTS - 1) {
		unsigned i = atomic_fetch_add_explicit(&slots_taken, 1, memory_order_relaxed);
		if (i < EF_SLOTS - 1)
			return taken(all, i);
	}
	for (unsigned w = 0; w < FREE_WORDS; w++) {
		uint64_t m = atomic_load_explicit(&slots_free[w], memory_order_acquire);
		while (m) {
			uint64_t bit = m & -m;
			m = atomic_fetch_and_explicit(&slots_free[w], ~bit, memory_order_acq_rel);
			if (m & bit)
				return taken(all, w * 64 + (unsigned)__builtin_ctzll(bit));
			m &= ~bit;
		}
	}
	return taken(all, EF_SLOTS - 1);
}

void ef_stats_release(struct ef_slot *s)
{
	if (!s || ef_stats_shared(s))
		return;
	unsigned i = (unsigned)(s - atomic_load_explicit(&ef_stats_slots, memory_order_relaxed));
	atomic_fetch_or_explicit(&slots_free[i / 64], 1ULL << (i % 64), memory_order_release);
}

void ef_stats_sum(struct ef_totals *t)
{
	ef_stats_sum_slots(ef_stats_all(), EF_SLOTS, t);
}

void ef_stats_learned(struct ef_slot *s, int learned)
{
	ef_stats_add(s, learned == EF_LEARNED_GENUINE ? EF_K_LEARNED_GENUINE
			: learned == EF_LEARNED_SUBMS ? EF_K_LEARNED_SUBMS
						      : EF_K_RETRIES);
}

void ef_stats_after_fork(struct ef_slot *keep)
{
	struct wiped *w = wiped();
	/* Zeroed already, but where the advice was refused. */
	for (unsigned i = 0; i < EF_SLOTS; i++)
		for (unsigned k = 0; k < EF_K_COUNT; k++)
			atomic_store_explicit(&w->slots[i].c[k], 0, memory_order_relaxed);
	atomic_store_explicit(&w->made_here, 1, memory_order_relaxed);
	/* The other threads are gone with their slots. */
	unsigned taken_n = atomic_load_explicit(&slots_taken, memory_order_relaxed);
	for (unsigned i = 0; i < EF_SLOTS - 1; i++)
		if (i < taken_n && &w->slots[i] != keep)
			ef_stats_release(&w->slots[i]);
	if (keep)
		ef_stats_add(keep, EF_K_THREADS);
}

/* ---- Call sites --------------------------------------------------------------- */

struct ef_site_row ef_site_rows[EF_SITE_ROWS];

static struct ef_site_row *site_row(const void *ra)
{
	for (unsigned i = 0; i < EF_SITE_ROWS; i++) {
		struct ef_site_row *row = &ef_site_rows[i];
		const void *seen = atomic_load_explicit(&row->ra, memory_order_acquire);
		if (seen == ra)
			return row;
		if (!seen && atomic_compare_exchange_strong(&row->ra, &seen, ra))
			return row;
		if (seen == ra) /* another thread claimed it for ra meanwhile */
			return row;
	}
	return NULL; /* more sites than rows: the report lists the first ones */
}

/* ra's row, through the thread's memo. A row's ra never changes once set, so
 * it tells whether the memo holds: a signal handler's call from another site
 * between the two reads costs the interrupted call a scan, not a wrong row. */
static struct ef_site_row *memo_row(struct ef_site_row **memo, const void *ra)
{
	struct ef_site_row *row = *memo;
	if (__builtin_expect(!row || atomic_load_explicit(&row->ra, memory_order_relaxed) != ra, 0))
		*memo = row = site_row(ra);
	return row;
}

static unsigned row_key(const struct ef_site_row *row, enum ef_site_counter counter)
{
	return EF_K_SITES + (unsigned)(row - ef_site_rows) * EF_SC_COUNT + counter;
}

EF_WAIT_PATH void ef_stats_site(struct ef_slot *s, struct ef_site_row **memo, const void *ra,
				const struct ef_site *site, struct ef_decision done,
				unsigned caller_flags)
{
	struct ef_site_row *row = memo_row(memo, ra);
	unsigned flags = caller_flags;

	if (!row)
		return;
	if (site) {
		flags |= site->shape == EF_SHAPE_ENDS ? EF_SF_ENDS : 0;
		flags |= site->shape == EF_SHAPE_ENDLESS ? EF_SF_ENDLESS : 0;
		flags |= site->proven ? EF_SF_PROVEN : 0;
		flags |= site->backoff_left ? EF_SF_BACKED_OFF : 0;
	}
	if (flags & ~atomic_load_explicit(&row->flags, memory_order_relaxed))
		atomic_fetch_or_explicit(&row->flags, flags, memory_order_relaxed);
	if (done.action == EF_UPGRADE) {
		ef_stats_add(s, row_key(row, EF_SC_UPGRADED));
		ef_stats_add_n(s, row_key(row, EF_SC_WAIT_NS), (uint64_t)done.wait_ns);
	} else if (done.action == EF_GENUINE) {
		ef_stats_add(s, row_key(row, EF_SC_ALONE));
	}
}

EF_WAIT_PATH void ef_stats_site_ended(struct ef_slot *s, struct ef_site_row **memo,
				      const void *ra)
{
	struct ef_site_row *row = memo_row(memo, ra);
	if (row)
		ef_stats_add(s, row_key(row, EF_SC_RUNS));
}

/* ---- At exit ---------------------------------------------------------------- */


/* "%p" becomes the pid, so each process of a forking program has its own file. */
static void expand_path(const char *stats_path, char *dst, size_t size, long pid)
{
	struct ef_buf b = { dst, 0, size };
	for (const char *p = stats_path; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			ef_fmt(&b, "%ld", pid);
			p++;
		} else {
			ef_fmt(&b, "%c", *p);
		}
	}
}

static void refused(const char *stats_path, const char *why)
{
	ef_log(EF_LOG_WARN, "EPOLLFIX_STATS='%s' %s; the report goes to stderr", stats_path, why);
}

/* The report file, or stderr. It can neither hang the exit nor be redirected:
 * O_NOFOLLOW refuses a final symlink (ELOOP), which another user could have
 * planted in /tmp; O_NONBLOCK makes a FIFO with no reader fail (ENXIO) instead
 * of blocking for ever; and anything but a regular file (a FIFO with a reader,
 * a directory, a device) is refused after fstat. Mode 0644, not 0666: the
 * umask still applies (077 gives 0600), but no umask, not even the 0 of some
 * daemons, makes a report that other users could append forged lines to. */
static int open_report(const char *stats_path, const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0) {
		char why[128];
		ef_fmt(&EF_BUF(why), "cannot be opened (%s)", strerror(errno));
		refused(stats_path, why);
		return STDERR_FILENO;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		refused(stats_path, "is not a regular file");
		return STDERR_FILENO;
	}
	return fd;
}

/* A call site as dladdr(3) names it: "libfoo.so (fn+42)"; the program's own
 * file by its name (ctx). */
static void site_where(const void *ra, const void *ctx, struct ef_buf *w)
{
	Dl_info info;
	if (dladdr(ra, &info) && info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');
		ef_fmt(w, "%s", slash ? slash + 1 : *info.dli_fname ? info.dli_fname : (const char *)ctx);
		if (info.dli_sname && info.dli_saddr)
			ef_fmt(w, " (%s+%td)", info.dli_sname, (const char *)ra - (const char *)info.dli_saddr);
	} else {
		ef_fmt(w, "?");
	}
}

/* The program's name at start, for a report that may not open /proc. */
static char comm_at_start[32];

static int stats_wanted(const struct ef_text *set)
{
	return set && set->stats[0] && strcmp(set->stats, "0") != 0;
}

void ef_stats_prepare(void)
{
	if (stats_wanted(ef_state_text()))
		ef_proc_line("comm", comm_at_start, sizeof(comm_at_start));
}

/* The exit report's own calls go only where every filter the library read
 * allows them (sandbox.h's EF_DENY_OPEN and EF_DENY_WRITE; loaded with
 * dlopen, a filter it could not read denies both): with no open, it writes
 * to stderr under the name read at start; with no write, there is none. */
void ef_stats_report(void)
{
	char text[8192], comm[32], path[PATH_MAX + 32];
	struct ef_buf out = EF_BUF(text);
	struct ef_totals t;
	struct ef_config c;
	const struct ef_text *set = ef_state_text();
	int saved = errno;

	/* EPOLLFIX_STATS: unset or 0, no report; 1, stderr; else a path. Always
	 * unset in secure execution (state.c). */
	unsigned denied = ef_sandbox_denied();
	if (!stats_wanted(set) || !ef_state_config(&c) || !ef_state_selected() || (denied & EF_DENY_WRITE))
		return;
	long pid = (long)getpid();
	ef_stats_sum(&t);
	/* A shell or sed started by a preloaded script has nothing to say. */
	if (t.calls[EF_CALL_WAIT] + t.calls[EF_CALL_PWAIT] == 0)
		return;
	if (denied & EF_DENY_OPEN)
		ef_fmt(&EF_BUF(comm), "%s", comm_at_start);
	else
		ef_proc_line("comm", comm, sizeof(comm));
	static struct ef_site_view views[EF_SITE_ROWS]; /* at exit, once: not on the stack */
	ef_site_views(ef_site_rows, ef_stats_all(), EF_SLOTS, views);
	struct ef_report_in in = { .t = &t, .c = &c, .pid = pid, .comm = comm,
				   .runtimes = ef_runtimes_seen(), .sites = views,
				   .where = site_where, .ctx = comm };
	in.pw2 = ef_pwait2_state(&in.pw2_why);
	ef_report_format(&in, &out);
	/* One write(2) of the whole report, O_APPEND for files: it never lands in
	 * the middle of another process's line. */
	int fd = STDERR_FILENO;
	if (strcmp(set->stats, "1") != 0 && (denied & EF_DENY_OPEN)) {
		refused(set->stats, "is not opened: a seccomp filter the program installed forbids it");
	} else if (strcmp(set->stats, "1") != 0) {
		expand_path(set->stats, path, sizeof(path), pid);
		fd = open_report(set->stats, path);
	}
	ef_buf_write(&out, fd);
	if (fd != STDERR_FILENO)
		close(fd);
	errno = saved;
}
