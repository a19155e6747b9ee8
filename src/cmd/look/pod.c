/* Pod identity of a process (pod.h). The shapes of the cgroup paths are the
 * ones kubelet names (pkg/kubelet/cm/cgroup_manager_linux.go: "pod" and the
 * uid, under "kubepods"; the systemd driver writes the uid's dashes as
 * underscores and ends each name in ".slice") and the runtimes name within
 * them ("cri-containerd-<id>.scope", "crio-<id>.scope", the cgroupfs driver's
 * bare "<id>"; CRI-O's "crio-conmon-<id>.scope" holds its monitor, not the
 * container). */
#define _GNU_SOURCE
#include "pod.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "proc.h"

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A uid at s, 36 characters, '-' or (systemd) '_' at 8, 13, 18 and 23. */
static int take_uid(const char *s, size_t n, char out[37])
{
	if (n < 36)
		return 0;
	for (int i = 0; i < 36; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' && s[i] != '_' : !is_hex(s[i]))
			return 0;
		out[i] = dash ? '-' : s[i];
	}
	out[36] = '\0';
	return 1;
}

static int take_id(const char *s, size_t n, char out[65])
{
	if (n != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!is_hex(s[i]))
			return 0;
	memcpy(out, s, 64);
	out[64] = '\0';
	return 1;
}

static int starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && memcmp(s, prefix, k) == 0;
}

/* The pod's segment: "pod<uid>" (cgroupfs) or "...kubepods...-pod<uid>.slice"
 * (systemd, which may carry ":<runtime>:<id>" when a runtime names its scope
 * within the slice). *rest: what follows the ".slice" in that case. */
static int pod_segment(const char *s, size_t n, char uid[37], const char **rest, size_t *nrest)
{
	*rest = NULL, *nrest = 0;
	if (n == 39 && starts(s, n, "pod"))
		return take_uid(s + 3, 36, uid);
	const char *slice = NULL;
	for (const char *p = s; p + 6 <= s + n; p++)
		if (memcmp(p, ".slice", 6) == 0)
			slice = p;
	if (!slice || slice - s < 40 || memcmp(slice - 40, "-pod", 4) != 0)
		return 0;
	/* Only kubelet's pod slices: the name before says kubepods. */
	int kubepods = 0;
	for (const char *p = s; p + 8 <= slice - 40; p++)
		kubepods |= memcmp(p, "kubepods", 8) == 0;
	if (!kubepods || !take_uid(slice - 36, 36, uid))
		return 0;
	*rest = slice + 6;
	*nrest = (size_t)(s + n - *rest);
	return *nrest == 0 || **rest == ':';
}

/* The container's segment, right below the pod's. */
static int container_segment(const char *s, size_t n, char id[65])
{
	static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-",
						"cri-dockerd-" };
	if (starts(s, n, "crio-conmon-"))
		return 0;
	if (n > 6 && memcmp(s + n - 6, ".scope", 6) == 0)
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (starts(s, n, prefixes[i])) {
			size_t k = strlen(prefixes[i]);
			return take_id(s + k, n - k, id);
		}
	return take_id(s, n, id);
}

int ef_pod_from_cgroup(const char *path, struct ef_pod *p)
{
	p->uid[0] = p->container_id[0] = '\0';
	int found = 0;
	for (const char *s = path; s && *s;) {
		s += strspn(s, "/");
		size_t n = strcspn(s, "/\n");
		if (!n)
			break;
		if (found) {
			container_segment(s, n, p->container_id);
			break;
		}
		const char *rest;
		size_t nrest;
		if (pod_segment(s, n, p->uid, &rest, &nrest)) {
			found = 1;
			/* "pod-slice:cri-containerd:<id>": the runtime and the id after. */
			const char *colon = nrest ? memchr(rest + 1, ':', nrest - 1) : NULL;
			if (colon && !starts(rest + 1, nrest - 1, "crio-conmon"))
				take_id(colon + 1, (size_t)(rest + nrest - colon - 1), p->container_id);
			if (colon)
				break;
		}
		s += n;
	}
	if (!found)
		p->uid[0] = p->container_id[0] = '\0';
	return found;
}

/* The line of /proc/PID/cgroup that names the pod: cgroup v2's ("0::PATH")
 * first, else a v1 controller's ("N:CONTROLLERS:PATH"; kubelet puts a pod in
 * the same path under every controller): on a hybrid host a process may be
 * in its pod's cgroup in one hierarchy and at "/" in the others. Lines are
 * taken whole only: one cut by the read's bound is not read. */
int ef_cgroup_lines(const char *file, size_t len,
		    int (*fn)(const char *path, size_t n, int v2, void *arg), void *arg)
{
	for (size_t at = 0; at < len;) {
		const char *line = file + at, *nl = memchr(line, '\n', len - at);
		if (!nl)
			break; /* cut by the read's bound: not taken */
		at = (size_t)(nl - file) + 1;
		const char *c1 = memchr(line, ':', (size_t)(nl - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nl - c1 - 1)) : NULL;
		if (!c2)
			continue;
		int v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
		int r = fn(c2 + 1, (size_t)(nl - c2 - 1), v2, arg);
		if (r)
			return r;
	}
	return 0;
}

/* The line that names the pod, as ef_pod_from_cgroups ranks them. */
struct best {
	struct ef_pod *p;
	size_t size;
	const char *path;
	size_t n;
	int rank; /* 4: v2 with a pod; 3: v1 with a pod; 2: v2; 1: the first line */
};

static int rank_line(const char *path, size_t n, int v2, void *arg)
{
	struct best *b = arg;
	struct ef_pod q;
	if (n >= b->size)
		return 0;
	/* The path parser stops at the line's end. */
	int pod = ef_pod_from_cgroup(path, &q);
	int rank = pod ? 3 + v2 : v2 ? 2 : !b->path;
	if (rank > b->rank) {
		b->path = path, b->n = n, b->rank = rank;
		if (pod)
			memcpy(b->p->uid, q.uid, sizeof(q.uid)),
				memcpy(b->p->container_id, q.container_id, sizeof(q.container_id));
	}
	return 0;
}

int ef_pod_from_cgroups(const char *file, size_t len, struct ef_pod *p, char *path, size_t size)
{
	struct best b = { p, size, NULL, 0, 0 };
	p->uid[0] = p->container_id[0] = '\0';
	ef_cgroup_lines(file, len, rank_line, &b);
	if (size) {
		memcpy(path, b.path ? b.path : "", b.n);
		path[b.n] = '\0';
	}
	return b.rank >= 3;
}

/* A DNS name's characters, lowercase: what namespace, pod and container names
 * are made of (RFC 1123), and at most size - 1 of them. */
static int take_name(const char *v, size_t n, char *out, size_t size)
{
	if (!n || n >= size)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '-' ||
		      v[i] == '.'))
			return 0;
	memcpy(out, v, n);
	out[n] = '\0';
	return 1;
}

/* The pod uid the downward API gives: exactly a uid. */
static int take_env_uid(const char *v, size_t n, char *out, size_t size)
{
	return size >= 37 && n == 36 && take_uid(v, n, out);
}

/* The first entry of LD_PRELOAD (split as the loaders split it, on blanks and
 * colons) whose file is a libepollfix*.so. */
static int take_preload(const char *v, size_t n, char *out, size_t size)
{
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		while (i + k < n && !strchr(" \t\n:", v[i + k]))
			k++;
		const char *e = v + i, *base = e;
		for (size_t j = 0; j < k; j++)
			if (e[j] == '/')
				base = e + j + 1;
		size_t rest = (size_t)(e + k - base);
		if (k && k < size && rest >= 11 && memcmp(base, "libepollfix", 11) == 0 &&
		    memmem(base + 11, rest - 11, ".so", 3)) {
			memcpy(out, e, k);
			out[k] = '\0';
			return 1;
		}
		i += k + 1;
	}
	return 0;
}

int ef_pod_env_parse(const char *env, size_t len, struct ef_pod_env *e)
{
	static const struct {
		const char *name;
		size_t off, size;
		int (*take)(const char *, size_t, char *, size_t);
	} vars[] = {
		{ EF_POD_ENV_NAMESPACE "=", offsetof(struct ef_pod_env, ns), sizeof(e->ns), take_name },
		{ EF_POD_ENV_NAME "=", offsetof(struct ef_pod_env, name), sizeof(e->name), take_name },
		{ EF_POD_ENV_CONTAINER "=", offsetof(struct ef_pod_env, container),
		  sizeof(e->container), take_name },
		{ EF_POD_ENV_UID "=", offsetof(struct ef_pod_env, uid), sizeof(e->uid), take_env_uid },
		{ "LD_PRELOAD=", offsetof(struct ef_pod_env, preload), sizeof(e->preload),
		  take_preload },
	};
	int found = 0;
	e->ns[0] = e->name[0] = e->container[0] = e->uid[0] = e->preload[0] = '\0';
	for (size_t at = 0; at < len;) {
		const char *s = env + at;
		const char *end = memchr(s, '\0', len - at);
		size_t n = end ? (size_t)(end - s) : len - at;
		/* A string cut by the bound (no NUL) may be a cut value: not taken. */
		for (size_t i = 0; end && i < sizeof(vars) / sizeof(vars[0]); i++) {
			size_t k = strlen(vars[i].name);
			char *out = (char *)e + vars[i].off;
			if (n >= k && memcmp(s, vars[i].name, k) == 0 && !*out)
				found += vars[i].take(s + k, n - k, out, vars[i].size);
		}
		at += n + 1;
	}
	return found;
}

int ef_pod_take_names(struct ef_pod *p, const struct ef_pod_env *e)
{
	p->ns[0] = p->name[0] = p->container[0] = '\0';
	/* Only a pod the cgroup names, and only the environment of that pod. */
	if (!p->uid[0] || strcmp(e->uid, p->uid) != 0)
		return 0;
	memcpy(p->ns, e->ns, sizeof(p->ns));
	memcpy(p->name, e->name, sizeof(p->name));
	memcpy(p->container, e->container, sizeof(p->container));
	return !!p->ns[0] + !!p->name[0] + !!p->container[0];
}

int ef_pod_env_of(long pid, struct ef_pod_env *e)
{
	static char env[EF_POD_ENVIRON_MAX];
	ssize_t n = ef_proc_read(pid, "environ", env, sizeof(env));
	if (n > 0)
		return ef_pod_env_parse(env, (size_t)n, e), 0;
	ef_pod_env_parse("", 0, e);
	return -1;
}

void ef_pod_short(const struct ef_pod *p, char *out, size_t size)
{
	if (p->ns[0] && p->name[0])
		snprintf(out, size, "%s/%s/%s", p->ns, p->name, p->container[0] ? p->container : "?");
	else if (p->uid[0])
		snprintf(out, size, "pod%s/%.12s", p->uid, p->container_id[0] ? p->container_id : "?");
	else
		snprintf(out, size, "-");
}
