/* How `epollfix status` shows a look at a process (look.c read it): one JSON
 * object (--json), one line of the table of every process, or, for one
 * process, the report it would print at exit, from the same formatter
 * (report.c). The command (status.c) decides what to look at and when; this
 * file only writes what a look holds, and the rates between two looks. */
#define _GNU_SOURCE
#include "show.h"

#include <stdio.h>
#include <string.h>

#include "report.h"

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

/* ,"kubernetes":{...}: null outside a pod, and "" for what is not known (pod.h). */
static void json_pod(FILE *out, const struct ef_pod *pod)
{
	if (pod->ns[0] || pod->name[0] || pod->uid[0]) {
		const char *const kube[][2] = { { "namespace", pod->ns }, { "pod", pod->name },
						{ "container", pod->container }, { "pod_uid", pod->uid },
						{ "container_id", pod->container_id } };
		for (size_t i = 0; i < sizeof(kube) / sizeof(kube[0]); i++) {
			fprintf(out, "%s\"%s\":", i ? "," : ",\"kubernetes\":{", kube[i][0]);
			json_str(out, kube[i][1]);
		}
		fputc('}', out);
	} else {
		fputs(",\"kubernetes\":null", out);
	}
}

struct ef_show_prev ef_show_remember(const struct look *l, double now)
{
	return (struct ef_show_prev){ l->pid, l->start_ticks, l->t.upgraded, l->t.clamped,
				      l->t.passed, now };
}

struct ef_show_rates ef_show_rates_of(const struct look *l, const struct ef_show_prev *p,
				       double now)
{
	struct ef_show_rates r = { 0, 0, 0, l->age_s, "start" };
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

/* A quantile's bound for JSON: -1 for the open bucket (later than any bound). */
static long long late_bound_json(uint64_t us)
{
	return us == UINT64_MAX ? -1 : (long long)us;
}

void ef_show_json(FILE *out, const struct look *l, const struct ef_show_rates *r)
{
	char pw[128], rts[128] = "";
	struct ef_buf pwb = EF_BUF(pw);
	const struct ef_totals *t = &l->t;

	ef_pwait2_line((enum ef_pwait2_state)l->pw2_state, l->pw2_why, &pwb);
	fprintf(out, "{\"pid\":%ld,\"program\":", l->pid);
	json_str(out, l->comm);
	fputs(",\"library\":", out);
	json_str(out, l->lib);
	fprintf(out, ",\"loaded\":%s,\"library_state\":\"%s\"",
		ef_look_unloaded(l) ? "false" : "true", ef_look_lib_word(l));
	if (ef_look_unloaded(l)) {
		/* Who it is, and nothing of a library it has not. */
		fprintf(out, ",\"ns_pid\":%ld,\"cgroup\":", l->ns_pid);
		json_str(out, l->cgroup);
		json_pod(out, &l->pod);
		fputs("}\n", out);
		return;
	}
	fputs(",\"version\":", out);
	json_str(out, l->block.version);
	fprintf(out, ",\"build_id\":\"%s\",\"layout\":%u,\"acting\":%s,\"epoll_pwait2\":{\"state\":\"%s\","
		     "\"text\":",
		l->build_id, l->block.layout, l->selected && !l->c.disable ? "true" : "false",
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
	json_pod(out, &l->pod);
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
		if (!ra)
			break;
		fputs(i ? ",{\"where\":" : "{\"where\":", out);
		json_str(out, l->where[i][0] ? l->where[i] : "?");
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

void ef_show_header(FILE *out)
{
	fprintf(out, "%7s %-15s %-8s %10s %8s %10s %8s %10s %8s %13s  %s\n", "PID", "PROGRAM",
		"VERSION", "UPGRADED", "/s", "CLAMPED", "/s", "PASSED", "/s", "LATE p50/p99", "EPOLL_PWAIT2");
}

void ef_show_line(FILE *out, const struct look *l, const struct ef_show_rates *r)
{
	char pw[160], ru[32], rc[32], rp[32], name[128], version[64];
	struct ef_buf nb = EF_BUF(name), vb = EF_BUF(version);
	/* What the process says of itself, escaped and cut to its column. */
	ef_esc(&nb, l->comm, 15);
	ef_esc(&vb, ef_look_unloaded(l) ? "-" : l->block.version, 8);
	/* A process in a pod says which, last: "pod namespace/name/container". */
	char pod[512] = "";
	if (l->pod.ns[0] || l->pod.uid[0]) {
		memcpy(pod, "  pod ", 6);
		ef_pod_short(&l->pod, pod + 6, sizeof(pod) - 6);
	}
	/* Its LD_PRELOAD names the library, which it has not: nothing counted. */
	if (ef_look_unloaded(l)) {
		fprintf(out, "%7ld %s %s %10s %8s %10s %8s %10s %8s %13s  NOT LOADED: %s%s\n", l->pid,
			name, version, "-", "-", "-", "-", "-", "-", "-", ef_look_lib_word(l), pod);
		return;
	}
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
	fprintf(out, "%7ld %s %s %10llu %8s %10llu %8s %10llu %8s %13s  %s%s\n", l->pid, name,
		version, (unsigned long long)l->t.upgraded, ru,
		(unsigned long long)l->t.clamped, rc, (unsigned long long)l->t.passed, rp, late, pw, pod);
}

/* A site's name, as the look read it (ef_look_name_sites). */
static void site_where(const void *ra, const void *ctx, struct ef_buf *w)
{
	const struct look *l = ctx;
	for (unsigned i = 0; i < EF_SITE_ROWS; i++)
		if (l->sites[i].ra == ra) {
			ef_fmt(w, "%s", l->where[i][0] ? l->where[i] : "?");
			return;
		}
	ef_fmt(w, "?");
}

/* The container and the pod of the process, a line each when known. */
static void show_where(FILE *out, const struct look *l)
{
	if (l->ns_pid || l->cgroup[0]) {
		static char cg[sizeof(l->cgroup) * 4];
		struct ef_buf cgb = EF_BUF(cg);
		ef_esc(&cgb, l->cgroup[0] ? l->cgroup : "?", 0);
		fprintf(out, "epollfix[%ld] container: pid %ld in its namespace, cgroup %s\n", l->pid,
			l->ns_pid, cg);
	}
	if (l->pod.ns[0] || l->pod.uid[0]) {
		const struct ef_pod *p = &l->pod;
		fprintf(out, "epollfix[%ld] pod: namespace %s, pod %s, container %s, pod uid %s, "
			     "container id %s\n",
			l->pid, p->ns[0] ? p->ns : "?", p->name[0] ? p->name : "?",
			p->container[0] ? p->container : "?", p->uid[0] ? p->uid : "?",
			p->container_id[0] ? p->container_id : "?");
	}
}

/* The exit report's text, from the shared formatter, and what only a live
 * look has: the library and the rates; for a process whose LD_PRELOAD names
 * the library it has not loaded, why, and where it runs. */
void ef_show_report(FILE *out, const struct look *l, const struct ef_show_rates *r)
{
	char text[8192], ru[32], rc[32], rp[32], comm[128];
	char lib[PATH_MAX * 4 + 1], version[64];
	struct ef_buf b = EF_BUF(text), cb = EF_BUF(comm);
	struct ef_buf lb = EF_BUF(lib), vb = EF_BUF(version);

	ef_esc(&cb, l->comm, 0);
	ef_esc(&lb, l->lib, 0);
	ef_esc(&vb, l->block.version, 0);
	if (ef_look_unloaded(l)) {
		fprintf(out, "epollfix[%ld] library: NOT LOADED (%s): LD_PRELOAD names %s: %s\n", l->pid,
			ef_look_lib_word(l), lib, ef_look_lib_why(l));
		show_where(out, l);
		return;
	}
	struct ef_report_in in = { .t = &l->t, .c = &l->c, .pid = l->pid, .comm = comm,
				   .pw2 = (enum ef_pwait2_state)l->pw2_state, .pw2_why = l->pw2_why,
				   .runtimes = l->runtimes, .sites = l->sites,
				   .where = site_where, .ctx = l };
	ef_report_format(&in, &b);
	fputs(text, out);
	fprintf(out, "epollfix[%ld] library: %s %s (build %s)\n", l->pid, version, lib, l->build_id);
	show_where(out, l);
	rate_text(r->upgraded, ru, sizeof(ru));
	rate_text(r->clamped, rc, sizeof(rc));
	rate_text(r->passed, rp, sizeof(rp));
	fprintf(out, "epollfix[%ld] rates: upgraded %s/s, clamped %s/s, passed %s/s (%s %.1fs)\n",
		l->pid, ru, rc, rp, strcmp(r->since, "start") == 0 ? "since the start," : "over the last",
		r->over_s);
}
