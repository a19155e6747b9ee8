/* `epollfix status [PID] [--watch[=1s]] [--json] [--metrics[=DIR]]`: what
 * libepollfix is doing in running processes, as text or JSON (show.c) or
 * metrics (metrics.c), from what look.c reads of them from outside. This file
 * is the command: its arguments, which processes it looks at, and when.
 *
 * Rates: a one-shot look divides the counters by the time since the process
 * started (/proc/PID/stat; counters start at zero in a fork child too); with
 * --watch, each refresh gives the rates since the previous one. Nothing is
 * stored between runs. */
#define _GNU_SOURCE
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentlook.h"
#include "gometrics.h"
#include "golook.h"
#include "look.h"
#include "parse.h"
#include "proc.h"
#include "show.h"
#include "textfile.h"

static int usage(FILE *out)
{
	fprintf(out,
		"usage: epollfix status [--json | --metrics | --textfile=DIR] [--per-process] [--watch[=1s]] [PID]\n\n"
		"Without PID: one line for each process with libepollfix loaded that you may read\n"
		"(and for each whose LD_PRELOAD names it but that has it not loaded, NOT LOADED),\n"
		"the report line of each Go supervisor (epollfix-gosup, doc/go.md) and of each Go\n"
		"process the agent serves (epollfix agent, doc/agent.md).\n"
		"With PID: the report the process would print at exit (EPOLLFIX_STATS), now.\n"
		"Rates are per second since the process started, or with --watch since the previous\n"
		"refresh. --json: one JSON object per process and line. --metrics: Prometheus's\n"
		"text format; --textfile=DIR: the same into DIR/epollfix.prom, replaced whole\n"
		"(node_exporter's textfile collector). A series stands for a program in a\n"
		"container (its namespace, pod and container), its processes summed; with\n"
		"--per-process, or PID, for one process (its pid, ns_pid and cgroup too).\n"
		"Exit status: 0; 2 usage; 3 no such process; 4 not permitted; 5 libepollfix not\n"
		"loaded there; 6 a libepollfix of another version or layout.\n");
	return out == stdout ? 0 : EF_ST_USAGE;
}


static int served_go(long pid);

/* Every process whose look succeeds (pid 0: all of /proc), for --metrics. */
static size_t collect(long pid, struct look **out)
{
	size_t n = 0, cap = 0;
	struct look *ls = NULL;
	DIR *d = pid ? NULL : opendir("/proc");
	struct dirent *de = NULL;
	long self = (long)getpid();

	while (pid ? !n && !cap : d && (de = readdir(d))) {
		long p = pid ? pid : ef_proc_is_pid(de->d_name) ? atol(de->d_name) : 0;
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
		const char *why;
		/* A process whose LD_PRELOAD names the library it has not loaded
		 * too: its metrics say so (epollfix_library_loaded 0). */
		if (ef_look_at(p, &ls[n]) || ef_look_unloaded(&ls[n]))
			n++;
		else if (pid && !served_go(pid) && ef_look_failure(&why) >= 0)
			fprintf(stderr, "epollfix: status: %s\n", why); /* not a Go program served either */
	}
	if (d)
		closedir(d);
	*out = ls;
	return n;
}

/* What --metrics writes: the looks' families, then the Go programs' (the
 * supervisors' and the agent's, gometrics.h). */
struct metrics_in {
	const struct look *ls;
	size_t n;
	long pid;
	enum ef_metrics_by by;
};

static void write_metrics(FILE *out, void *arg)
{
	const struct metrics_in *in = arg;
	if (ef_metrics_write(out, in->ls, in->n, in->by) != 0)
		fprintf(stderr, "epollfix: status: no memory for the metrics of %zu processes\n", in->n);
	if (ef_gometrics_write(out, in->pid, in->by) != 0)
		fprintf(stderr, "epollfix: status: no memory for the metrics of the Go programs served\n");
}

/* An agent's process: its report line. */
static void agent_line(const struct ef_agentrec *r, void *arg)
{
	char text[1024];
	struct ef_buf b = EF_BUF(text);
	ef_agent_report(r, &b);
	fputs(text, arg);
}

/* The line of the process pid when an agent serves it. */
static void agent_line_of(const struct ef_agentrec *r, void *arg)
{
	if (r->pid == *(long *)arg) {
		agent_line(r, stdout);
		*(long *)arg = 0;
	}
}

static void none_sup(const struct ef_golook *g, void *arg)
{
	(void)g, (void)arg;
}

static void none_agent(const struct ef_agentrec *r, void *arg)
{
	(void)r, (void)arg;
}

/* Whether pid is a Go process served (or a supervisor or an agent). */
static int served_go(long pid)
{
	return ef_golook_each(pid, none_sup, NULL) + ef_agentlook_each(pid, none_agent, NULL) > 0;
}

/* The previous round's looks, for --watch's rates. */
static struct ef_show_prev *prevs;
static size_t nprev;

static const struct ef_show_prev *prev_of(long pid)
{
	for (size_t i = 0; i < nprev; i++)
		if (prevs[i].pid == pid)
			return &prevs[i];
	return NULL;
}


/* Every process listed in /proc, one line (or object) each for those running
 * libepollfix; returns the number shown. */
static int list_all(int json, int watching, struct ef_show_prev *next, size_t *nnext,
		    size_t next_cap)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int shown = 0, unloaded = 0, refused = 0;
	long self = (long)getpid();
	struct look l;

	if (!d) {
		fprintf(stderr, "epollfix: status: /proc: %s\n", strerror(errno));
		return -1;
	}
	double now = ef_look_now();
	while ((de = readdir(d))) {
		if (!ef_proc_is_pid(de->d_name))
			continue;
		long pid = atol(de->d_name);
		if (pid == self)
			continue;
		if (!ef_look_at(pid, &l) && ef_look_unloaded(&l)) {
			/* Its LD_PRELOAD names the library, which it has not: shown. */
			if (json) {
				ef_show_json(stdout, &l, NULL);
			} else {
				if (!shown)
					ef_show_header(stdout);
				ef_show_line(stdout, &l, NULL);
			}
			shown++, unloaded++;
			continue;
		} else if (l.lib_state != EF_LIB_LOADED) {
			/* Only processes whose maps show the library and that then refused. */
			const char *why;
			int code = ef_look_failure(&why);
			if (code == EF_ST_PERM && l.lib[0])
				refused++;
			else if (code == EF_ST_LAYOUT || (code == EF_ST_NOLIB && l.lib[0]))
				fprintf(stderr, "epollfix: status: %s\n", why);
			continue;
		}
		struct ef_show_rates r = ef_show_rates_of(&l, watching ? prev_of(pid) : NULL, now);
		if (json) {
			ef_look_name_sites(&l);
			ef_show_json(stdout, &l, &r);
		} else {
			if (!shown)
				ef_show_header(stdout);
			ef_show_line(stdout, &l, &r);
		}
		if (*nnext < next_cap)
			next[(*nnext)++] = ef_show_remember(&l, now);
		shown++;
	}
	closedir(d);
	/* Go supervisors: their report line each (golook.h). */
	int supervisors = json ? 0 : ef_golook_list(0, stdout) + ef_agentlook_each(0, agent_line, stdout);
	if (!json && !shown && !supervisors)
		printf("no process with libepollfix loaded%s\n",
		       geteuid() == 0 ? "" : " that you may read (other users' need root)");
	else if (!json && shown > unloaded)
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
		n += ef_proc_is_pid(de->d_name);
	if (d)
		closedir(d);
	return n;
}

int ef_status_main(int argc, char **argv)
{
	int json = 0, watch = 0, metrics = 0, per_process = 0;
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
		} else if (strcmp(a, "--per-process") == 0) {
			per_process = 1;
		} else if (strcmp(a, "--watch") == 0) {
			watch = 1;
		} else if (strncmp(a, "--watch=", 8) == 0) {
			watch = 1;
			enum ef_parse_err err = ef_parse_duration(a + 8, 10000000, 3600 * 1000000000LL,
								  &every_ns);
			if (err != EF_PARSE_OK) {
				fprintf(stderr, "epollfix: status: --watch='%s' %s (10ms to 1h)\n", a + 8,
					ef_parse_strerror(err, 1));
				return EF_ST_USAGE;
			}
		} else if (ef_proc_is_pid(a) && !pid && strlen(a) < 10 && atol(a) > 0) {
			pid = atol(a);
		} else {
			fprintf(stderr, "epollfix: status: unexpected '%s'\n", a);
			return usage(stderr);
		}
	}
	if (metrics && json) {
		fprintf(stderr, "epollfix: status: --json and --metrics are two formats: one of them\n");
		return EF_ST_USAGE;
	}
	if (per_process && !metrics) {
		fprintf(stderr, "epollfix: status: --per-process is of --metrics and --textfile\n");
		return EF_ST_USAGE;
	}
	/* --textfile: DIR opened once, held for every round (textfile.h). */
	struct ef_textfile tf = { .path = textfile, .dirfd = -1 };
	if (textfile && ef_textfile_open(&tf, textfile) != 0)
		return 1;
	for (; metrics;) {
		struct look *ls;
		size_t n = collect(pid, &ls);
		/* One process asked for by its pid: its own series, as the
		 * process it is. */
		struct metrics_in in = { ls, n, pid,
					 per_process || pid ? EF_METRICS_BY_PROCESS : EF_METRICS_BY_CONTAINER };
		const char *why;
		int r = EF_ST_OK;
		/* A Go process served without the library: its Go families. */
		if (pid && !n && !served_go(pid))
			r = ef_look_failure(&why);
		else if (textfile)
			r = ef_textfile_replace(&tf, write_metrics, &in) ? 1 : EF_ST_OK;
		else
			write_metrics(stdout, &in);
		free(ls);
		/* A round that could not write the file said why in one line; the
		 * watch goes on and tries again at the next (a full file system, a
		 * name taken for a moment). */
		if (!watch || (r != EF_ST_OK && !(textfile && r == 1)) || fflush(stdout) != 0) {
			ef_textfile_close(&tf);
			return r;
		}
		struct timespec d = { every_ns / 1000000000, every_ns % 1000000000 };
		nanosleep(&d, NULL);
	}
	/* A pipe closed by the reader (`| head`) ends --watch quietly. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	int tty = isatty(STDOUT_FILENO);
	for (int round = 0;; round++) {
		size_t cap = pid ? 1 : count_proc() + 64, n = 0;
		struct ef_show_prev *next = calloc(cap, sizeof(*next));
		if (!next) {
			perror("epollfix: status");
			return 1;
		}
		if (watch && tty && !json)
			fputs("\033[H\033[2J", stdout);
		long served = pid;
		/* Whatever serves the process: the line of a Go supervisor (of
		 * the supervisor's pid, or of the program it serves) or of the
		 * agent; then the library's report where it is loaded (a cgo
		 * program's C code), which alone says nothing of the runtime's
		 * waits. */
		int go = pid && !json &&
			 (ef_golook_list(pid, stdout) ||
			  (ef_agentlook_each(pid, agent_line_of, &served) && !served));
		if (pid) {
			struct look l;
			int looked = ef_look_at(pid, &l);
			if (!looked && !go) {
				const char *why;
				int code = ef_look_failure(&why);
				/* Not loaded though LD_PRELOAD names it: where it runs, too. */
				if (ef_look_unloaded(&l) && json)
					ef_show_json(stdout, &l, NULL);
				else if (ef_look_unloaded(&l))
					ef_show_report(stdout, &l, NULL);
				fflush(stdout);
				fprintf(stderr, "epollfix: status: %s\n", why);
				free(next);
				free(prevs);
				return code;
			} else if (looked) {
				double now = ef_look_now();
				struct ef_show_rates r =
					ef_show_rates_of(&l, watch ? prev_of(pid) : NULL, now);
				ef_look_name_sites(&l);
				if (json)
					ef_show_json(stdout, &l, &r);
				else
					ef_show_report(stdout, &l, &r);
				next[n++] = ef_show_remember(&l, now);
			}
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
	return EF_ST_OK;
}
