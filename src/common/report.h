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

/* The report: every line starts with "epollfix[pid] ". pwait2 is
 * ef_pwait2_line's text; runtimes names the event loops recognised ("libuv,
 * nginx"), or is empty. */
void ef_stats_format(const struct ef_totals *t, const struct ef_config *c, long pid,
		     const char *comm, const char *pwait2, const char *runtimes,
		     struct ef_buf *out);

/* One call site's row as the report shows it ("where" names the object and
 * symbol). */
void ef_stats_format_site(const struct ef_site_view *row, const struct ef_config *c, long pid,
			  const char *where, struct ef_buf *out);

#endif
