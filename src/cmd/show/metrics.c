/* `epollfix status --metrics` and `--textfile=DIR`: what the looks at running
 * processes (look.h) hold, for Prometheus, as series a fleet's Prometheus can
 * keep (ef_metrics_write says which).
 *
 * By default a series stands for the processes of one program in one
 * container: labels program and, in Kubernetes, namespace, pod, container and
 * pod_uid (pod_uid and container_id when the names are not known, pod.h), as
 * cAdvisor and kube-state-metrics label, and none that changes when a process
 * restarts: a pid would give every restart a new set of series, and each
 * process ~60 of them (the histogram's buckets). The values are the
 * processes' sums: counters, the lateness histogram's buckets, and the counts
 * of processes; the flags (acting, epoll_pwait2 usable) hold for every
 * process of the series. Per process (EF_METRICS_BY_PROCESS), a series is one
 * process: pid, program, ns_pid and cgroup besides the pod's labels.
 *
 * Counters are the processes' own totals (a server derives rates): a sum drops
 * when one of its processes exits, which Prometheus's rate() reads as a
 * counter reset, as for a container that restarts in cAdvisor's. The lateness
 * of timed waits is a histogram of the library's own power-of-two buckets. A
 * process whose LD_PRELOAD names the library but that has none loaded counts
 * only in epollfix_library_loaded (0) and epollfix_processes. */
#define _GNU_SOURCE /* open_memstream, before musl's 2017 default */
#include "look.h"

#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "live.h" /* enum ef_pwait2_state */

/* A label value: the process's string through the one escaper (no control
 * characters, valid UTF-8), then the exposition format's own escapes. */
static void label(FILE *out, const char *name, const char *value)
{
	char esc[4 * PATH_MAX + 1]; /* a cgroup path, every byte escaped */
	struct ef_buf b = EF_BUF(esc);
	ef_esc(&b, value, 0);
	fprintf(out, "%s=\"", name);
	for (const char *p = esc; *p; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', out);
		fputc(*p, out);
	}
	fputc('"', out);
}

/* The labels of l's series, written once and shared by its families:
 * `pid="..",program="..",ns_pid="..",cgroup=".."` per process, else
 * `program=".."`; then the pod's labels that are known. A string to free, or
 * NULL when there is no memory. */
char *ef_metrics_labels(long pid, const char *comm, long ns_pid, const char *cgroup,
			const struct ef_pod *p, enum ef_metrics_by by)
{
	char *s = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);
	if (!out)
		return NULL;
	if (by == EF_METRICS_BY_PROCESS) {
		char spid[24], sns_pid[24];
		snprintf(spid, sizeof(spid), "%ld", pid);
		snprintf(sns_pid, sizeof(sns_pid), "%ld", ns_pid);
		label(out, "pid", spid);
		fputc(',', out);
		label(out, "program", comm);
		fputc(',', out);
		label(out, "ns_pid", sns_pid);
		fputc(',', out);
		label(out, "cgroup", cgroup);
	} else {
		label(out, "program", comm);
	}
	/* Its pod, as far as it is known: names from the variables the chart
	 * injects, else the uid and id its cgroup path gives (pod.h). The
	 * container's id changes at each of its restarts: a series of the
	 * container's processes keeps it only when it is the one name the
	 * container has (kube-state-metrics' kube_pod_container_info joins it
	 * to the names). */
	const char *const kube[][2] = {
		{ "namespace", p->ns }, { "pod", p->name }, { "container", p->container }, { "pod_uid", p->uid },
		{ "container_id", by == EF_METRICS_BY_PROCESS || !p->container[0] ? p->container_id : "" }
	};
	for (size_t i = 0; i < sizeof(kube) / sizeof(kube[0]); i++)
		if (kube[i][1][0]) {
			fputc(',', out);
			label(out, kube[i][0], kube[i][1]);
		}
	if (fclose(out) != 0 || !s) {
		free(s);
		return NULL;
	}
	return s;
}

/* A series set: the looks of one program in one container (or one process),
 * members of the sorted array. */
struct member {
	const struct look *l;
	char *labels;
};

struct group {
	const char *labels;
	const struct member *m;
	size_t n, loaded; /* members, and those with the library loaded */
};

static int by_labels(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->labels, ((const struct member *)b)->labels);
}

/* `name{labels,extra} `. */
static void sample(FILE *out, const char *name, const struct group *g, const char *extra)
{
	fprintf(out, "%s{%s%s%s} ", name, g->labels, extra ? "," : "", extra ? extra : "");
}

void ef_metrics_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The sum over the group's processes with the library of the counter at
 * offset off of their totals. */
static uint64_t sum_at(const struct group *g, size_t off)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < g->n; i++)
		if (!ef_look_unloaded(g->m[i].l))
			sum += *(const uint64_t *)(const void *)((const char *)&g->m[i].l->t + off);
	return sum;
}

#define AT(field) offsetof(struct ef_totals, field)

/* Whether member i is the first of its group whose word(...) is its own:
 * each state (or version) a series of its own, once. */
static int first_of(const struct group *g, size_t i, const char *(*word)(const struct look *))
{
	char mine[160]; /* word may answer in one static buffer */
	snprintf(mine, sizeof(mine), "%s", word(g->m[i].l));
	for (size_t j = 0; j < i; j++)
		if (ef_look_unloaded(g->m[j].l) == ef_look_unloaded(g->m[i].l) &&
		    strcmp(word(g->m[j].l), mine) == 0)
			return 0;
	return 1;
}

/* "version=\"..\",build_id=\"..\"" of a look with the library: the version is
 * the process's string, through the one escaper; no quote or backslash gets
 * through it unescaped but these, and a version has neither. */
static const char *info_labels(const struct look *l)
{
	static char extra[160];
	char version[sizeof(l->block.version) * 4];
	struct ef_buf vb = EF_BUF(version);
	ef_esc(&vb, l->block.version, 0);
	snprintf(extra, sizeof(extra), "version=\"%.40s\",build_id=\"%s\"",
		 strpbrk(version, "\\\"") ? "?" : version, l->build_id);
	return extra;
}

/* One sample of name per group and library state (ef_look_lib_word): the
 * number of the group's processes in that state (count), or whether that
 * state is "loaded" (1) or not (0). */
static void by_lib_state(FILE *out, const struct group *gs, size_t ng, const char *name, int count)
{
	for (size_t k = 0; k < ng; k++)
		for (size_t i = 0; i < gs[k].n; i++) {
			const struct look *l = gs[k].m[i].l;
			const char *word = ef_look_lib_word(l);
			char extra[32];
			size_t n = 0;
			if (!first_of(&gs[k], i, ef_look_lib_word))
				continue;
			for (size_t j = i; j < gs[k].n; j++)
				n += strcmp(ef_look_lib_word(gs[k].m[j].l), word) == 0;
			snprintf(extra, sizeof(extra), "state=\"%s\"", word);
			sample(out, name, &gs[k], extra);
			fprintf(out, "%zu\n", count ? n : (size_t)!ef_look_unloaded(l));
		}
}

static void write_groups(FILE *out, const struct group *gs, size_t ng)
{
	static const struct {
		size_t off;
		const char *label;
	} calls[] = { { AT(calls[EF_CALL_WAIT]), "function=\"epoll_wait\"" },
		      { AT(calls[EF_CALL_PWAIT]), "function=\"epoll_pwait\"" } },
	  classes[] = { { AT(by_class[EF_T_NEGATIVE]), "timeout=\"negative\"" },
			{ AT(by_class[EF_T_ZERO]), "timeout=\"zero\"" },
			{ AT(by_class[EF_T_ONE_MS]), "timeout=\"one_ms\"" },
			{ AT(by_class[EF_T_UP_TO_MAX]), "timeout=\"up_to_max\"" },
			{ AT(by_class[EF_T_LONGER]), "timeout=\"longer\"" } };
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "epollfix_upgraded_waits_total",
		  "Waits the policy judged rounded-up sub-millisecond requests, made with epoll_pwait2.",
		  AT(upgraded) },
		{ "epollfix_hinted_waits_total",
		  "Waits the program gave an exact timeout for (epollfix_hint_ns, the Python integration).",
		  AT(hinted) },
		{ "epollfix_stale_hints_total",
		  "Exact timeouts dropped because the wait that followed did not fit them.", AT(hint_stale) },
		{ "epollfix_clamped_waits_total", "Zero-timeout polls of a busy loop given a minimum wait.",
		  AT(clamped) },
		{ "epollfix_passed_waits_total", "Waits that ran with the program's own arguments.", AT(passed) },
		{ "epollfix_fell_back_waits_total",
		  "Upgrades or clamps that ran the real call because epoll_pwait2 was unusable.", AT(fell_back) },
		{ "epollfix_genuine_waits_total",
		  "1 ms waits left alone because the loop means them (recognised or learned).", AT(genuine) },
		{ "epollfix_empty_zero_polls_total", "Zero-timeout polls that found nothing.", AT(empty_zero) },
		{ "epollfix_threads_total", "Threads that made an epoll wait.", AT(threads) },
		{ "epollfix_rationed_waits_total",
		  "Waits left as asked because the wake-ups the library added reached EPOLLFIX_MAX_EXTRA.",
		  AT(rationed) },
	};

	/* Every process whose LD_PRELOAD names the library, loaded or not: a
	 * pod injected but running without it is 0 here, never just absent. */
	ef_metrics_family(out, "epollfix_library_loaded", "gauge",
	       "1 when libepollfix is loaded in the processes; 0 when their LD_PRELOAD names it and it is not (state: missing, static, not_loaded).");
	by_lib_state(out, gs, ng, "epollfix_library_loaded", 0);
	ef_metrics_family(out, "epollfix_processes", "gauge",
	       "Processes whose LD_PRELOAD names libepollfix, by whether it is loaded (state, as epollfix_library_loaded's).");
	by_lib_state(out, gs, ng, "epollfix_processes", 1);
	ef_metrics_family(out, "epollfix_info", "gauge",
	       "The library in the processes: its version and build (always 1).");
	for (size_t k = 0; k < ng; k++)
		for (size_t i = 0; i < gs[k].n; i++) {
			const struct look *l = gs[k].m[i].l;
			if (ef_look_unloaded(l) || !first_of(&gs[k], i, info_labels))
				continue;
			sample(out, "epollfix_info", &gs[k], info_labels(l));
			fputs("1\n", out);
		}
	ef_metrics_family(out, "epollfix_acting", "gauge",
	       "1 when the library acts in every process, 0 when EPOLLFIX_ONLY, _SKIP or _DISABLE leave one alone.");
	for (size_t k = 0; k < ng; k++) {
		int acting = 1;
		if (!gs[k].loaded)
			continue;
		for (size_t i = 0; i < gs[k].n; i++) {
			const struct look *l = gs[k].m[i].l;
			if (!ef_look_unloaded(l) && !(l->selected && !l->c.disable))
				acting = 0;
		}
		sample(out, "epollfix_acting", &gs[k], NULL);
		fprintf(out, "%d\n", acting);
	}
	ef_metrics_family(out, "epollfix_epoll_pwait2_usable", "gauge",
	       "1 when epoll_pwait2 works in the processes; state says why not.");
	for (size_t k = 0; k < ng; k++)
		for (size_t i = 0; i < gs[k].n; i++) {
			const struct look *l = gs[k].m[i].l;
			char extra[32];
			if (ef_look_unloaded(l) || !first_of(&gs[k], i, ef_look_pwait2_word))
				continue;
			snprintf(extra, sizeof(extra), "state=\"%s\"", ef_look_pwait2_word(l));
			sample(out, "epollfix_epoll_pwait2_usable", &gs[k], extra);
			fprintf(out, "%d\n", l->pw2_state == EF_PW2_OK);
		}
	ef_metrics_family(out, "epollfix_calls_total", "counter", "epoll waits the program made, by function.");
	for (size_t k = 0; k < ng; k++)
		for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]) && gs[k].loaded; c++) {
			sample(out, "epollfix_calls_total", &gs[k], calls[c].label);
			fprintf(out, "%" PRIu64 "\n", sum_at(&gs[k], calls[c].off));
		}
	ef_metrics_family(out, "epollfix_timeouts_total", "counter",
	       "epoll waits by the timeout the program asked for.");
	for (size_t k = 0; k < ng; k++)
		for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]) && gs[k].loaded; c++) {
			sample(out, "epollfix_timeouts_total", &gs[k], classes[c].label);
			fprintf(out, "%" PRIu64 "\n", sum_at(&gs[k], classes[c].off));
		}
	for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		ef_metrics_family(out, counters[c].name, "counter", counters[c].help);
		for (size_t k = 0; k < ng; k++) {
			if (!gs[k].loaded)
				continue;
			sample(out, counters[c].name, &gs[k], NULL);
			fprintf(out, "%" PRIu64 "\n", sum_at(&gs[k], counters[c].off));
		}
	}

	ef_metrics_family(out, "epollfix_wait_lateness_seconds", "histogram",
	       "How late the library's timed waits (upgraded or hinted) came back after their timeout.");
	for (size_t k = 0; k < ng; k++) {
		uint64_t cum = 0;
		if (!gs[k].loaded)
			continue;
		for (unsigned b = 0; b < EF_LATE_BUCKETS; b++) {
			char extra[48];
			cum += sum_at(&gs[k], AT(late) + b * sizeof(uint64_t));
			if (b == EF_LATE_BUCKETS - 1)
				snprintf(extra, sizeof(extra), "le=\"+Inf\"");
			else
				snprintf(extra, sizeof(extra), "le=\"%g\"", (double)(1u << b) * 1e-6);
			sample(out, "epollfix_wait_lateness_seconds_bucket", &gs[k], extra);
			fprintf(out, "%" PRIu64 "\n", cum);
		}
		sample(out, "epollfix_wait_lateness_seconds_sum", &gs[k], NULL);
		fprintf(out, "%.9f\n", (double)sum_at(&gs[k], AT(late_ns)) * 1e-9);
		sample(out, "epollfix_wait_lateness_seconds_count", &gs[k], NULL);
		fprintf(out, "%" PRIu64 "\n", cum);
	}
}

int ef_metrics_write(FILE *out, const struct look *looks, size_t n, enum ef_metrics_by by)
{
	struct member *ms = calloc(n ? n : 1, sizeof(*ms));
	struct group *gs = calloc(n ? n : 1, sizeof(*gs));
	size_t nm = 0, ng = 0;
	int r = 0;

	if (!ms || !gs) {
		r = -1;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		ms[nm].l = &looks[i];
		const struct look *l = &looks[i];
		if (!(ms[nm].labels = ef_metrics_labels(l->pid, l->comm, l->ns_pid, l->cgroup, &l->pod, by))) {
			r = -1;
			goto done;
		}
		nm++;
	}
	/* Per process, in the order of the looks (pids differ: one each). */
	if (by != EF_METRICS_BY_PROCESS)
		qsort(ms, nm, sizeof(*ms), by_labels);
	for (size_t i = 0; i < nm; i++) {
		if (!ng || by == EF_METRICS_BY_PROCESS || strcmp(gs[ng - 1].labels, ms[i].labels) != 0)
			gs[ng++] = (struct group){ ms[i].labels, &ms[i], 0, 0 };
		gs[ng - 1].n++;
		gs[ng - 1].loaded += !ef_look_unloaded(ms[i].l);
	}
	write_groups(out, gs, ng);
done:
	for (size_t i = 0; ms && i < nm; i++)
		free(ms[i].labels);
	free(ms);
	free(gs);
	return r;
}
