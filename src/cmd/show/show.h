/* How a look at a process (look.h) is shown by `epollfix status` (show.c): one
 * JSON object, one line of the table, or the full report, each with the rates
 * between two looks. Apart from the command (status.c), which decides what to
 * look at and when, so each can change without the other. Every string the
 * process gave is escaped here before it is written. */
#ifndef EPOLLFIX_SHOW_H
#define EPOLLFIX_SHOW_H

#include <stdint.h>
#include <stdio.h>

#include "look.h"

/* What the next look's rates are computed over: the counters of an earlier
 * look at the same process, and when it was taken (ef_look_now's clock). */
struct ef_show_prev {
	long pid;
	unsigned long long start_ticks;
	uint64_t upgraded, clamped, passed;
	double at;
};

/* Per second, over over_s seconds. */
struct ef_show_rates {
	double upgraded, clamped, passed, over_s;
	const char *since; /* "start" or "previous" */
};

/* The look at now, to compute the next look's rates over. */
struct ef_show_prev ef_show_remember(const struct look *l, double now);

/* The rates of l at now: since p when p is an earlier look at the same process
 * (the same pid and start time: not one that reused the pid), since the
 * process started otherwise (p NULL too). */
struct ef_show_rates ef_show_rates_of(const struct look *l, const struct ef_show_prev *p,
				       double now);

/* A look at a process that has not loaded the library its LD_PRELOAD names
 * (ef_look_unloaded) is shown too, as such, by each of the three below: who it
 * is, where it runs and why the library is not there; r may then be NULL. */

/* One JSON object and a newline: the fields of `epollfix status --json`. */
void ef_show_json(FILE *out, const struct look *l, const struct ef_show_rates *r);

/* The table's header, then one line per process. */
void ef_show_header(FILE *out);
void ef_show_line(FILE *out, const struct look *l, const struct ef_show_rates *r);

/* The report the process would print at exit, and what only a live look has:
 * the library, the container and the rates. */
void ef_show_report(FILE *out, const struct look *l, const struct ef_show_rates *r);

#endif
