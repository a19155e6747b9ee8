/* `epollfix status --metrics` and `--textfile=DIR`: what the looks at running
 * processes (look.h) hold, for Prometheus. Every sample carries the process:
 * pid, program, and the container it runs in (its pid in its namespace, its
 * cgroup; in Kubernetes namespace, pod and container, or pod_uid and
 * container_id), so a dashboard can tell services apart. Counters are
 * the process's own totals (a server derives rates); the lateness of timed
 * waits is a histogram of the library's own power-of-two buckets. A process
 * whose LD_PRELOAD names the library but that has none loaded has one
 * sample, epollfix_library_loaded 0, and no other. */
#include "look.h"

#include <inttypes.h>
#include <limits.h>
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

/* `name{pid="..",program="..",ns_pid="..",cgroup=".."`, the pod's labels
 * that are known, and extra, then "} ". */
static void sample(FILE *out, const char *name, const struct look *l, const char *extra)
{
	char pid[24], ns_pid[24];
	snprintf(pid, sizeof(pid), "%ld", l->pid);
	snprintf(ns_pid, sizeof(ns_pid), "%ld", l->ns_pid);
	fprintf(out, "%s{", name);
	label(out, "pid", pid);
	fputc(',', out);
	label(out, "program", l->comm);
	fputc(',', out);
	label(out, "ns_pid", ns_pid);
	fputc(',', out);
	label(out, "cgroup", l->cgroup);
	/* Its pod, as far as it is known: names from the variables the chart
	 * injects, else the uid and id its cgroup path gives (pod.h). */
	const struct ef_pod *p = &l->pod;
	const char *const kube[][2] = { { "namespace", p->ns }, { "pod", p->name },
					{ "container", p->container }, { "pod_uid", p->uid },
					{ "container_id", p->container_id } };
	for (size_t i = 0; i < sizeof(kube) / sizeof(kube[0]); i++)
		if (kube[i][1][0]) {
			fputc(',', out);
			label(out, kube[i][0], kube[i][1]);
		}
	fprintf(out, "%s%s} ", extra ? "," : "", extra ? extra : "");
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One counter family of a totals field, every look. */
#define COUNTER(out, looks, n, name, help, field)                                        \
	do {                                                                             \
		family(out, name, "counter", help);                                     \
		for (size_t i_ = 0; i_ < (n); i_++) {                                   \
			if (ef_look_unloaded(&(looks)[i_]))                             \
				continue;                                               \
			sample(out, name, &(looks)[i_], NULL);                          \
			fprintf(out, "%" PRIu64 "\n", (looks)[i_].t.field);             \
		}                                                                       \
	} while (0)

void ef_metrics_write(FILE *out, const struct look *looks, size_t n)
{
	static const char *const fn[EF_CALL_COUNT] = { "function=\"epoll_wait\"",
						       "function=\"epoll_pwait\"" };
	static const struct {
		enum ef_tclass tc;
		const char *label;
	} classes[] = { { EF_T_NEGATIVE, "timeout=\"negative\"" }, { EF_T_ZERO, "timeout=\"zero\"" },
			{ EF_T_ONE_MS, "timeout=\"one_ms\"" }, { EF_T_UP_TO_MAX, "timeout=\"up_to_max\"" },
			{ EF_T_LONGER, "timeout=\"longer\"" } };

	/* Every process whose LD_PRELOAD names the library, loaded or not: a
	 * pod injected but running without it is 0 here, never just absent. */
	family(out, "epollfix_library_loaded", "gauge",
	       "1 when libepollfix is loaded in the process; 0 when its LD_PRELOAD names it and it is not (state: missing, static, not_loaded).");
	for (size_t i = 0; i < n; i++) {
		char extra[32];
		snprintf(extra, sizeof(extra), "state=\"%s\"", ef_look_lib_word(&looks[i]));
		sample(out, "epollfix_library_loaded", &looks[i], extra);
		fprintf(out, "%d\n", !ef_look_unloaded(&looks[i]));
	}
	family(out, "epollfix_info", "gauge",
	       "The library in the process: its version and build (always 1).");
	for (size_t i = 0; i < n; i++) {
		char extra[160];
		if (ef_look_unloaded(&looks[i]))
			continue;
		char version[sizeof(looks[i].block.version) * 4];
		struct ef_buf vb = EF_BUF(version);
		ef_esc(&vb, looks[i].block.version, 0);
		/* The version is the process's string too: no quote or backslash gets
		 * through ef_esc unescaped but these, and a version has neither. */
		snprintf(extra, sizeof(extra), "version=\"%.40s\",build_id=\"%s\"",
			 strpbrk(version, "\\\"") ? "?" : version, looks[i].build_id);
		sample(out, "epollfix_info", &looks[i], extra);
		fputs("1\n", out);
	}
	family(out, "epollfix_acting", "gauge",
	       "1 when the library acts in the process, 0 when EPOLLFIX_ONLY, _SKIP or _DISABLE leave it alone.");
	for (size_t i = 0; i < n; i++) {
		if (ef_look_unloaded(&looks[i]))
			continue;
		sample(out, "epollfix_acting", &looks[i], NULL);
		fprintf(out, "%d\n", looks[i].selected && !looks[i].c.disable);
	}
	family(out, "epollfix_epoll_pwait2_usable", "gauge",
	       "1 when epoll_pwait2 works in the process; state says why not.");
	for (size_t i = 0; i < n; i++) {
		char extra[32];
		if (ef_look_unloaded(&looks[i]))
			continue;
		snprintf(extra, sizeof(extra), "state=\"%s\"", ef_look_pwait2_word(&looks[i]));
		sample(out, "epollfix_epoll_pwait2_usable", &looks[i], extra);
		fprintf(out, "%d\n", looks[i].pw2_state == EF_PW2_OK);
	}
	family(out, "epollfix_calls_total", "counter", "epoll waits the program made, by function.");
	for (size_t i = 0; i < n; i++)
		for (unsigned c = 0; c < EF_CALL_COUNT && !ef_look_unloaded(&looks[i]); c++) {
			sample(out, "epollfix_calls_total", &looks[i], fn[c]);
			fprintf(out, "%" PRIu64 "\n", looks[i].t.calls[c]);
		}
	family(out, "epollfix_timeouts_total", "counter",
	       "epoll waits by the timeout the program asked for.");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < sizeof(classes) / sizeof(classes[0]) && !ef_look_unloaded(&looks[i]); k++) {
			sample(out, "epollfix_timeouts_total", &looks[i], classes[k].label);
			fprintf(out, "%" PRIu64 "\n", looks[i].t.by_class[classes[k].tc]);
		}
	COUNTER(out, looks, n, "epollfix_upgraded_waits_total",
		"Waits the policy judged rounded-up sub-millisecond requests, made with epoll_pwait2.",
		upgraded);
	COUNTER(out, looks, n, "epollfix_hinted_waits_total",
		"Waits the program gave an exact timeout for (epollfix_hint_ns, the Python integration).",
		hinted);
	COUNTER(out, looks, n, "epollfix_stale_hints_total",
		"Exact timeouts dropped because the wait that followed did not fit them.", hint_stale);
	COUNTER(out, looks, n, "epollfix_clamped_waits_total",
		"Zero-timeout polls of a busy loop given a minimum wait.", clamped);
	COUNTER(out, looks, n, "epollfix_passed_waits_total",
		"Waits that ran with the program's own arguments.", passed);
	COUNTER(out, looks, n, "epollfix_fell_back_waits_total",
		"Upgrades or clamps that ran the real call because epoll_pwait2 was unusable.", fell_back);
	COUNTER(out, looks, n, "epollfix_genuine_waits_total",
		"1 ms waits left alone because the loop means them (recognised or learned).", genuine);
	COUNTER(out, looks, n, "epollfix_empty_zero_polls_total",
		"Zero-timeout polls that found nothing.", empty_zero);
	COUNTER(out, looks, n, "epollfix_threads_total", "Threads that made an epoll wait.", threads);
	COUNTER(out, looks, n, "epollfix_rationed_waits_total",
		"Waits left as asked because the wake-ups the library added reached EPOLLFIX_MAX_EXTRA.",
		rationed);

	family(out, "epollfix_wait_lateness_seconds", "histogram",
	       "How late the library's timed waits (upgraded or hinted) came back after their timeout.");
	for (size_t i = 0; i < n; i++) {
		const struct ef_totals *t = &looks[i].t;
		uint64_t cum = 0;
		if (ef_look_unloaded(&looks[i]))
			continue;
		for (unsigned b = 0; b < EF_LATE_BUCKETS; b++) {
			char extra[48];
			cum += t->late[b];
			if (b == EF_LATE_BUCKETS - 1)
				snprintf(extra, sizeof(extra), "le=\"+Inf\"");
			else
				snprintf(extra, sizeof(extra), "le=\"%g\"", (double)(1u << b) * 1e-6);
			sample(out, "epollfix_wait_lateness_seconds_bucket", &looks[i], extra);
			fprintf(out, "%" PRIu64 "\n", cum);
		}
		sample(out, "epollfix_wait_lateness_seconds_sum", &looks[i], NULL);
		fprintf(out, "%.9f\n", (double)t->late_ns * 1e-9);
		sample(out, "epollfix_wait_lateness_seconds_count", &looks[i], NULL);
		fprintf(out, "%" PRIu64 "\n", cum);
	}
}
