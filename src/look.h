/* One look at a process running libepollfix, as `epollfix status` reads it
 * (status.c) and shows it: text, JSON (status.c) and metrics (metrics.c). The
 * strings are the process's own: whatever shows them escapes them first. */
#ifndef EPOLLFIX_LOOK_H
#define EPOLLFIX_LOOK_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "live.h"
#include "totals.h"

struct look {
	long pid;
	unsigned long long start_ticks;
	double age_s; /* since the process started */
	char comm[64];
	long ns_pid;      /* its pid in its own pid namespace (NSpid's last); 0: unknown */
	char cgroup[256]; /* its cgroup (/proc/PID/cgroup's first line), "" unknown */
	char lib[PATH_MAX];
	struct ef_live block;
	struct ef_totals t;
	struct ef_config c;
	int selected, pw2_state, pw2_why;
	unsigned runtimes;
	struct ef_site_row rows[EF_SITE_ROWS]; /* as read */
	struct ef_site_view sites[EF_SITE_ROWS]; /* with their counters from the slots */
};

/* How an epoll_pwait2 state reads: "works", "fell back" or "not probed". */
const char *ef_look_pwait2_word(const struct look *l);

/* The metrics of every look, in Prometheus's text format (version 0.0.4, which
 * node_exporter's textfile collector reads): one HELP and TYPE a family,
 * counters named _total, base units, no timestamps (metrics.c). */
void ef_metrics_write(FILE *out, const struct look *looks, size_t n);

#endif
