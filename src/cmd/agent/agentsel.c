/* Which processes the agent serves (agentsel.h). */
#define _GNU_SOURCE
#include "agentsel.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "parse.h"
#include "pod.h"

int ef_sel_under(const char *path, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	/* "" (the root, "/" given) holds every path. */
	return n >= k && memcmp(path, prefix, k) == 0 && (n == k || path[k] == '/' || !k);
}

int ef_sel_in_unit(const char *path, size_t n, const char *unit)
{
	size_t k = strlen(unit);
	/* Only where the system manager puts a unit: below nothing but slices
	 * ("/system.slice/NAME", "/a.slice/a-b.slice/NAME"), which only it
	 * makes. Below any other unit the cgroup is that unit's own (a user's
	 * manager under user@UID.service/, a service that delegates): a name
	 * there is the name its owner chose. */
	for (size_t at = 0; at < n;) {
		while (at < n && path[at] == '/')
			at++;
		size_t len = 0;
		while (at + len < n && path[at + len] != '/')
			len++;
		if (len == k && memcmp(path + at, unit, k) == 0)
			return 1;
		if (!len || !(len > 6 && memcmp(path + at + len - 6, ".slice", 6) == 0))
			return 0;
		at += len;
	}
	return 0;
}

/* Characters of a unit's name (systemd.unit(5)): ASCII letters, digits, and
 * ":-_.\" ('@' for a template's instance). */
static int unit_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr(":-_.\\@", c);
}

static int has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n > k && memcmp(s + n - k, suffix, k) == 0;
}

/* One value of --cgroup: an absolute path as /proc/PID/cgroup shows it. */
static const char *take_cgroup(struct ef_sel *s, const char *v, size_t n)
{
	if (!n || v[0] != '/')
		return "not an absolute cgroup path (like /system.slice/app.service)";
	if (memchr(v, '\n', n) || n >= sizeof(s->cgroup[0]))
		return "not a cgroup path";
	while (n && v[n - 1] == '/')
		n--;
	memcpy(s->cgroup[s->ncgroup], v, n);
	s->cgroup[s->ncgroup++][n] = '\0';
	return NULL;
}

/* One value of --unit: NAME.service (or .scope, .slice); a bare NAME is
 * NAME.service, as systemctl reads it. */
static const char *take_unit(struct ef_sel *s, const char *v, size_t n)
{
	int typed = has_suffix(v, n, ".service") || has_suffix(v, n, ".scope") ||
		    has_suffix(v, n, ".slice");
	if (!n || n + (typed ? 0 : 8) >= sizeof(s->unit[0]))
		return "not a unit's name (like app.service)";
	for (size_t i = 0; i < n; i++)
		if (!unit_char(v[i]))
			return "not a unit's name (like app.service)";
	snprintf(s->unit[s->nunit++], sizeof(s->unit[0]), "%.*s%s", (int)n, v, typed ? "" : ".service");
	return NULL;
}

static const char *take_path(struct ef_sel *s, const char *v, size_t n)
{
	/* The value is argv's: kept as it is, so a path holding a comma is
	 * one prefix. */
	(void)n;
	if (v[0] != '/')
		return "not an absolute path";
	s->path[s->npath++] = v;
	return NULL;
}

int ef_sel_option(struct ef_sel *s, const char *arg)
{
	static const struct {
		const char *name;
		int list; /* a comma list (parse.h's one rule) */
		const char *(*take)(struct ef_sel *, const char *, size_t);
		size_t off;
	} opts[] = {
		{ "--path=", 0, take_path, offsetof(struct ef_sel, npath) },
		{ "--cgroup=", 1, take_cgroup, offsetof(struct ef_sel, ncgroup) },
		{ "--unit=", 1, take_unit, offsetof(struct ef_sel, nunit) },
	};
	if (strcmp(arg, "--all") == 0)
		return s->all = 1;
	if (strcmp(arg, "--pods") == 0)
		return s->pods = 1;
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		size_t k = strlen(opts[i].name);
		if (strncmp(arg, opts[i].name, k) != 0)
			continue;
		const char *cursor = arg + k, *v;
		size_t n = strlen(cursor);
		int *count = (int *)(void *)((char *)s + opts[i].off);
		if (!opts[i].list)
			v = *cursor ? cursor : NULL;
		else
			v = ef_list_next(&cursor, &n);
		if (!v)
			fprintf(stderr, "epollfix agent: warning: %.*s='' is empty: ignored\n", (int)k - 1, arg);
		for (; v; v = opts[i].list ? ef_list_next(&cursor, &n) : NULL) {
			const char *why = *count < EF_SEL_MAX ? opts[i].take(s, v, n) : "one too many";
			if (why)
				fprintf(stderr, "epollfix agent: warning: %.*s='%.*s' is %s: ignored\n",
					(int)k - 1, arg, (int)(n > 200 ? 200 : n), v, why);
		}
		return 1;
	}
	return 0;
}

int ef_sel_any(const struct ef_sel *s)
{
	return s->all || s->pods || s->npath || s->ncgroup || s->nunit;
}

int ef_sel_needs_cgroup(const struct ef_sel *s)
{
	return !s->all && (s->pods || s->ncgroup || s->nunit);
}

int ef_sel_exe_is(long pid, const char *exe)
{
	char link[64];
	struct stat here, runs;
	/* The path /proc/PID/exe gives is the one in the process's own mount
	 * namespace, where any user may mount over a directory (unshare -Urm):
	 * the file it runs must be the one this namespace has at that path. */
	snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
	return lstat(exe, &here) == 0 && S_ISREG(here.st_mode) && stat(link, &runs) == 0 &&
	       here.st_dev == runs.st_dev && here.st_ino == runs.st_ino;
}

/* Whether a line of /proc/PID/cgroup (v2's or any v1 hierarchy's) is under
 * a --cgroup or in a --unit. */
static int line_chosen(const char *path, size_t n, int v2, void *arg)
{
	const struct ef_sel *s = arg;
	(void)v2;
	for (int i = 0; i < s->ncgroup; i++)
		if (ef_sel_under(path, n, s->cgroup[i]))
			return 1;
	for (int i = 0; i < s->nunit; i++)
		if (ef_sel_in_unit(path, n, s->unit[i]))
			return 1;
	return 0;
}

int ef_sel_may_choose(const struct ef_sel *s, long pid, const char *exe, const char *cgroups,
		      size_t len)
{
	if (s->all)
		return 1;
	for (int i = 0; i < s->npath; i++)
		if (strncmp(exe, s->path[i], strlen(s->path[i])) == 0)
			return 1;
	if (!ef_sel_needs_cgroup(s))
		return 0;
	if (ef_cgroup_lines(cgroups, len, line_chosen, (void *)s))
		return 1;
	struct ef_pod pod;
	char path[4096];
	return s->pods && ef_pod_from_cgroups(pid, cgroups, len, &pod, path, sizeof(path));
}

int ef_sel_chosen(const struct ef_sel *s, long pid, const char *exe, const char *cgroups,
		  size_t len)
{
	if (s->all)
		return 1;
	for (int i = 0; i < s->npath; i++)
		if (strncmp(exe, s->path[i], strlen(s->path[i])) == 0 && ef_sel_exe_is(pid, exe))
			return 1;
	if (!ef_sel_needs_cgroup(s))
		return 0;
	/* Every line, v2's and each v1 hierarchy's; whole lines only. */
	if (ef_cgroup_lines(cgroups, len, line_chosen, (void *)s))
		return 1;
	if (!s->pods)
		return 0;
	/* A pod that opted in: the admission policy gave its containers
	 * EPOLLFIX_POD_UID, which must be the pod the cgroup (kubelet's, which
	 * the process cannot change) names: a process can opt in no one but its
	 * own pod. */
	struct ef_pod pod;
	char path[4096];
	if (!ef_pod_from_cgroups(pid, cgroups, len, &pod, path, sizeof(path)))
		return 0;
	struct ef_pod_env env;
	return ef_pod_env_of(pid, &env) == 0 && env.uid[0] && strcmp(env.uid, pod.uid) == 0;
}
