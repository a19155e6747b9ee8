/* The text a user reads about the library: the exit report, the policy line
 * and why epoll_pwait2 is not used. Pure functions of their arguments, shared
 * by the library and the epollfix command (--check). */
#ifndef EPOLLFIX_REPORT_H
#define EPOLLFIX_REPORT_H

#include "config.h"
#include "fmt.h"
#include "live.h"
#include "totals.h"

/* "libuv", ..., "listed in EPOLLFIX_SUBMS_CALLERS". */
const char *ef_runtime_name(enum ef_runtime rt);

/* "libuv, nginx": the classes whose bits (1 << rt) are set, or nothing. */
void ef_runtimes_text(unsigned seen, struct ef_buf *b);

/* Every variable as a user writes it: "disable=0 subms=50us ... adapt=auto". */
struct ef_buf *ef_policy_line(const struct ef_config *c, struct ef_buf *out);

/* Why epoll_pwait2 is not used, from ef_pwait2_state()'s why: "ENOSYS: kernel
 * before 5.11 or a filter", "EPERM: refused by a seccomp filter", "a probe was
 * killed by signal 31" (the command's probe, made in a child), the sandbox's
 * reasons (sandbox.h), or strerror's text. */
struct ef_buf *ef_pwait2_why(int why, struct ef_buf *out);

/* The report's line: "available", "unavailable (<why>)" or "not probed (no
 * call needed it)". */
struct ef_buf *ef_pwait2_line(enum ef_pwait2_state state, int why, struct ef_buf *out);

/* The lateness histogram in a few words: "p50 <= 64us, p99 <= 128us, mean 41us
 * (N waits)", or "no timed waits". Shared by the report and `epollfix status`. */
struct ef_buf *ef_late_line(const struct ef_totals *t, struct ef_buf *out);

/* What the report says of one process, gathered by whoever reads it: the
 * library of itself at exit (stats.c), or the command of another process from
 * outside (show.c). Strings are shown as given: the command escapes the
 * other process's first. */
struct ef_report_in {
	const struct ef_totals *t;
	const struct ef_config *c;
	long pid;
	const char *comm;
	enum ef_pwait2_state pw2;
	int pw2_why;
	unsigned runtimes;                /* the bits (1 << rt) of the runtimes recognised */
	const struct ef_site_view *sites; /* EF_SITE_ROWS, the used ones first */
	/* Names a site by its call address, as "libfoo.so (fn+42)" or "?". */
	void (*where)(const void *ra, const void *ctx, struct ef_buf *w);
	const void *ctx;
};

/* The whole report, one process's: every line starts with "epollfix[pid] ",
 * then a line for each call site. The one assembly of both reports. */
void ef_report_format(const struct ef_report_in *in, struct ef_buf *out);

#endif
