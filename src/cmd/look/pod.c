/* Pod identity of a process (pod.h). The shapes of the cgroup paths are the
 * ones kubelet names (pkg/kubelet/cm/cgroup_manager_linux.go: "pod" and the
 * uid, under "kubepods"; the systemd driver writes the uid's dashes as
 * underscores and ends each name in ".slice") and the runtimes name within
 * them ("cri-containerd-<id>.scope", "crio-<id>.scope", the cgroupfs driver's
 * bare "<id>"; CRI-O's "crio-conmon-<id>.scope" holds its monitor, not the
 * container). A pod is taken only where kubelet makes it: right under the
 * pod hierarchy's root, or under its QoS class's cgroup there; anywhere else
 * the names are whoever made the cgroup's (a user's delegated subtree). */
#define _GNU_SOURCE
#include "pod.h"

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The hierarchy's roots, as the node's init sees them. */
#define MAX_ROOTS 8
static char roots[MAX_ROOTS][4096];
static int nroots = -1;

void ef_pod_set_roots(const char *list)
{
	nroots = 0;
	for (const char *v = list; v && *v && nroots < MAX_ROOTS;) {
		v += strspn(v, ", \t");
		size_t whole = strcspn(v, ", \t"), n = whole;
		while (n > 1 && v[n - 1] == '/')
			n--;
		if (n > 1 && v[0] == '/' && n < sizeof(roots[0]) && !memchr(v, '\n', n)) {
			memcpy(roots[nroots], v, n);
			roots[nroots++][n] = '\0';
		} else if (n) {
			fprintf(stderr, "epollfix: warning: %s='%.*s' is not a cgroup path below / (like "
				"/kubepods.slice): ignored\n",
				EF_POD_ENV_KUBEPODS, (int)(n > 200 ? 200 : n), v);
		}
		v += whole;
	}
}

static void load_roots(void)
{
	if (nroots >= 0)
		return;
	const char *v = getenv(EF_POD_ENV_KUBEPODS);
	ef_pod_set_roots(v && *v ? v : EF_POD_ROOTS_DEFAULT);
}

/* Component i (from 0) of path[0..n) into *c, *len: 0 when there is none. */
static int component(const char *path, size_t n, int i, const char **c, size_t *len)
{
	size_t at = 0;
	for (int k = 0;; k++) {
		while (at < n && path[at] == '/')
			at++;
		if (at >= n)
			return 0;
		size_t m = strcspn(path + at, "/\n");
		m = at + m > n ? n - at : m;
		if (k == i) {
			*c = path + at, *len = m;
			return 1;
		}
		at += m;
	}
}

static int is(const char *s, size_t n, const char *a, const char *b)
{
	size_t ka = strlen(a), kb = strlen(b);
	return n == ka + kb && memcmp(s, a, ka) == 0 && memcmp(s + ka, b, kb) == 0;
}

/* Whether s is the pod slice kubelet's systemd driver names "<parent>-pod<uid>.slice"
 * (the uid's dashes as underscores), perhaps with ":<runtime>:<id>" after it
 * (containerd's cgroups path in a v1 hierarchy): the uid, and that rest. */
static int pod_slice(const char *s, size_t n, const char *parent, size_t np, char uid[37],
		     const char **rest, size_t *nrest)
{
	const char *colon = memchr(s, ':', n);
	size_t m = colon ? (size_t)(colon - s) : n;
	if (m != np + 4 + 36 + 6 || memcmp(s, parent, np) != 0 || memcmp(s + np, "-pod", 4) != 0 ||
	    memcmp(s + m - 6, ".slice", 6) != 0 || !take_uid(s + np + 4, 36, uid))
		return 0;
	for (int i = 0; i < 36; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) && s[np + 4 + i] != '_')
			return 0;
	*rest = s + m, *nrest = n - m;
	return 1;
}

int ef_pod_under(const char *path, size_t n, const char *root, struct ef_pod *p)
{
	static const char *const qos[] = { "burstable", "besteffort" };
	size_t k = strlen(root);
	p->uid[0] = p->container_id[0] = '\0';
	if (k < 2 || n <= k || memcmp(path, root, k) != 0 || path[k] != '/')
		return 0;
	const char *last = strrchr(root, '/') + 1, *c, *rest = NULL;
	size_t nlast = strlen(last), len, nrest = 0;
	const char *at = path + k;
	size_t left = n - k;
	int i = 1, found = 0;
	if (!component(at, left, 0, &c, &len))
		return 0;
	if (nlast > 6 && memcmp(last + nlast - 6, ".slice", 6) == 0) {
		/* systemd: "<root>-pod<uid>.slice", or that under "<root>-<qos>.slice". */
		char parent[4096 + 16];
		size_t np = nlast - 6;
		memcpy(parent, last, np);
		parent[np] = '\0';
		found = pod_slice(c, len, parent, np, p->uid, &rest, &nrest);
		for (size_t q = 0; !found && q < 2; q++) {
			int w = snprintf(parent + np, sizeof(parent) - np, "-%s", qos[q]);
			const char *c2;
			size_t len2;
			if (is(c, len, parent, ".slice") && component(at, left, 1, &c2, &len2)) {
				found = pod_slice(c2, len2, parent, np + (size_t)w, p->uid, &rest, &nrest);
				i = 2;
			}
			parent[np] = '\0';
		}
	} else {
		/* cgroupfs: "pod<uid>", or that under "<qos>". */
		if ((is(c, len, qos[0], "") || is(c, len, qos[1], "")) && component(at, left, 1, &c, &len))
			i = 2;
		found = len == 39 && memcmp(c, "pod", 3) == 0 && take_uid(c + 3, 36, p->uid);
		for (int d = 8; found && d <= 23; d += 5)
			found = c[3 + d] == '-';
	}
	if (!found) {
		p->uid[0] = '\0';
		return 0;
	}
	/* "pod-slice:cri-containerd:<id>": the runtime and the id after. */
	const char *colon = nrest > 1 ? memchr(rest + 1, ':', nrest - 1) : NULL;
	if (colon && !starts(rest + 1, nrest - 1, "crio-conmon"))
		take_id(colon + 1, (size_t)(rest + nrest - colon - 1), p->container_id);
	else if (!nrest && component(at, left, i, &c, &len))
		container_segment(c, len, p->container_id);
	return 1;
}

int ef_pod_from_cgroup(const char *path, struct ef_pod *p)
{
	size_t n = strcspn(path, "\n");
	load_roots();
	for (int i = 0; i < nroots; i++)
		if (ef_pod_under(path, n, roots[i], p))
			return 1;
	p->uid[0] = p->container_id[0] = '\0';
	return 0;
}

/* How many "/.." path begins with. */
static int climbs(const char *path, size_t n, const char **rest)
{
	int k = 0;
	while (n >= 3 && memcmp(path, "/..", 3) == 0 && (n == 3 || path[3] == '/'))
		path += 3, n -= 3, k++;
	*rest = path;
	return k;
}

struct line_of {
	const char *hier; /* "N:controllers", of the line to match */
	size_t nh;
	const char *file; /* the file the lines are of */
	int depth;
};

static int same_hierarchy(const char *path, size_t n, int v2, void *arg)
{
	struct line_of *w = arg;
	const char *rest;
	(void)v2;
	const char *line = path - w->nh - 1;
	if ((size_t)(path - w->file) < w->nh + 1 || (line > w->file && line[-1] != '\n') ||
	    memcmp(line, w->hier, w->nh) != 0)
		return 0;
	w->depth = climbs(path, n, &rest);
	return 1;
}

/* Whether pid is listed in cgroup.procs of the node's cgroup path (cgroup
 * v2's hierarchy as the node's init has it mounted, else as this reader has:
 * a mount made in the node's cgroup namespace shows the node's whole
 * hierarchy wherever it is read from): the kernel's word. */
static int listed(long pid, const char *path)
{
	static const char *const mounts[] = { "/proc/1/root/sys/fs/cgroup/unified",
					       "/proc/1/root/sys/fs/cgroup", "/sys/fs/cgroup/unified",
					       "/sys/fs/cgroup" };
	static char procs[64 * 1024];
	char file[2048], want[32];
	int w = snprintf(want, sizeof(want), "\n%ld\n", pid);
	for (size_t m = 0; m < sizeof(mounts) / sizeof(mounts[0]); m++) {
		if ((size_t)snprintf(file, sizeof(file), "%s%s/cgroup.procs", mounts[m], path) >= sizeof(file))
			continue;
		int fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		procs[0] = '\n';
		ssize_t r = read(fd, procs + 1, sizeof(procs) - 2);
		close(fd);
		if (r > 0 && memmem(procs, (size_t)r + 1, want, (size_t)w))
			return 1;
	}
	return 0;
}

/* The node's path of a line this reader sees from a cgroup namespace of its
 * own ("/../../<rest>"), into out: when it climbs to the node's root (as far
 * as the node's init's own line climbs), the rest; when less far, the place
 * under a root of the pod hierarchy (or its QoS classes) where the kernel
 * lists pid. 0 when neither. */
static int node_path(long pid, const char *file, const char *path, size_t n, int v2, char *out,
		     size_t size)
{
	static char init[32 * 1024];
	const char *rest, *line = path;
	int k = climbs(path, n, &rest);
	size_t nrest = (size_t)(path + n - rest);
	if (!k)
		return 0;
	while (line > file && line[-1] != '\n')
		line--;
	struct line_of w = { line, (size_t)(path - line - 1), init, -1 };
	ssize_t r = ef_proc_read(1, "cgroup", init, sizeof(init));
	if (r <= 0 || !ef_cgroup_lines(init, (size_t)r, same_hierarchy, &w) || k > w.depth)
		return 0;
	if (k == w.depth)
		return (size_t)snprintf(out, size, "%.*s", (int)nrest, rest) < size;
	/* Below the node's root: only a pod kubelet made, found where the
	 * kernel says this process is (cgroup v2's hierarchy). */
	static const char *const qos[] = { "", "burstable", "besteffort" };
	load_roots();
	for (int i = 0; v2 && i < nroots; i++)
		for (size_t q = 0; q < 3; q++) {
			const char *last = strrchr(roots[i], '/') + 1;
			size_t nlast = strlen(last);
			int sd = nlast > 6 && memcmp(last + nlast - 6, ".slice", 6) == 0;
			struct ef_pod p;
			int m = !*qos[q] ? snprintf(out, size, "%s%.*s", roots[i], (int)nrest, rest)
				: sd	 ? snprintf(out, size, "%s/%.*s-%s.slice%.*s", roots[i], (int)nlast - 6,
						    last, qos[q], (int)nrest, rest)
					 : snprintf(out, size, "%s/%s%.*s", roots[i], qos[q], (int)nrest, rest);
			if ((size_t)m < size && ef_pod_under(out, (size_t)m, roots[i], &p) && listed(pid, out))
				return 1;
		}
	return 0;
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
	long pid;
	const char *file;
};

static int rank_line(const char *path, size_t n, int v2, void *arg)
{
	struct best *b = arg;
	struct ef_pod q;
	char node[4096];
	if (n >= b->size || n >= sizeof(node))
		return 0;
	/* Seen from a cgroup namespace of this reader's own: the node's path. */
	memcpy(node, path, n);
	node[n] = '\0';
	if (b->pid && node_path(b->pid, b->file, path, n, v2, node, sizeof(node)) != 1)
		memcpy(node, path, n), node[n] = '\0';
	int pod = ef_pod_from_cgroup(node, &q);
	int rank = pod ? 3 + v2 : v2 ? 2 : !b->path;
	if (rank > b->rank) {
		b->path = path, b->n = n, b->rank = rank;
		if (pod)
			memcpy(b->p->uid, q.uid, sizeof(q.uid)),
				memcpy(b->p->container_id, q.container_id, sizeof(q.container_id));
	}
	return 0;
}

int ef_pod_from_cgroups(long pid, const char *file, size_t len, struct ef_pod *p, char *path,
			size_t size)
{
	struct best b = { p, size, NULL, 0, 0, pid, file };
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

/* "<ns>_<name>_<uid>", kubelet's name of a pod's log directory: 1 and the
 * names when it is of uid. */
static int pod_dir(const char *d, const char *uid, struct ef_pod *p)
{
	size_t n = strlen(d);
	const char *u1 = strchr(d, '_'), *u2 = u1 ? strchr(u1 + 1, '_') : NULL;
	if (!u2 || n != (size_t)(u2 - d) + 1 + 36 || strcmp(u2 + 1, uid) != 0)
		return 0;
	return take_name(d, (size_t)(u1 - d), p->ns, sizeof(p->ns)) &&
	       take_name(u1 + 1, (size_t)(u2 - u1 - 1), p->name, sizeof(p->name));
}

/* A directory kubelet writes: the variable's, else its default. */
static const char *kubelet_dir(const char *var, const char *dflt)
{
	const char *v = getenv(var);
	return v && *v ? v : dflt;
}

int ef_pod_node_names(struct ef_pod *p)
{
	const char *pods = kubelet_dir(EF_POD_ENV_KUBELET_POD_LOGS, "/var/log/pods");
	const char *containers = kubelet_dir(EF_POD_ENV_KUBELET_CONTAINER_LOGS, "/var/log/containers");
	char dir[4096], link[4096];
	p->ns[0] = p->name[0] = p->container[0] = '\0';
	if (!p->uid[0])
		return 0;
	/* kubelet's pod log directory: <pods>/<ns>_<name>_<uid>/<container>/. */
	DIR *d = opendir(pods);
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d)))
		found = pod_dir(e->d_name, p->uid, p);
	if (d)
		closedir(d);
	if (!found) {
		p->ns[0] = p->name[0] = '\0';
		return 0;
	}
	/* The container: the one of the pod's whose log kubelet links by the
	 * container's id, <containers>/<name>_<ns>_<container>-<id>.log. */
	snprintf(dir, sizeof(dir), "%s/%s_%s_%s", pods, p->ns, p->name, p->uid);
	d = p->container_id[0] ? opendir(dir) : NULL;
	struct stat st;
	while (d && (e = readdir(d))) {
		char c[sizeof(p->container)];
		if (!take_name(e->d_name, strlen(e->d_name), c, sizeof(c)))
			continue;
		if ((size_t)snprintf(link, sizeof(link), "%s/%s_%s_%s-%s.log", containers, p->name, p->ns,
				     c, p->container_id) < sizeof(link) &&
		    lstat(link, &st) == 0) {
			memcpy(p->container, c, sizeof(c));
			break;
		}
	}
	if (d)
		closedir(d);
	return 2 + !!p->container[0];
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
