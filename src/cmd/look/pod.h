/* Which Kubernetes pod and container a process runs in, as `epollfix status`
 * names it and `epollfix agent --pods` chooses it: the node's word only. The
 * pod's uid and the container's id come from the process's cgroup path, and
 * only from where kubelet makes a pod's cgroup: right under a root of its pod
 * hierarchy (EPOLLFIX_KUBEPODS, as the node's init sees the cgroups; kubelet's
 * defaults /kubepods.slice and /kubepods), or under a QoS class's cgroup
 * there; a cgroup of that name anywhere else is whoever made it's (a user's
 * delegated subtree). The names (namespace, pod, container) are kubelet's
 * too: its log directories, /var/log/pods/<ns>_<pod>_<uid>/<container>/ and
 * /var/log/containers/<pod>_<ns>_<container>-<id>.log, which only root
 * writes (EPOLLFIX_KUBELET_POD_LOGS, EPOLLFIX_KUBELET_CONTAINER_LOGS: other
 * places); never the process's environment, which it owns. Everything here
 * of the process is hostile: bounded, and only values of the characters
 * Kubernetes allows are kept. */
#ifndef EPOLLFIX_POD_H
#define EPOLLFIX_POD_H

#include <limits.h>
#include <stddef.h>

/* The kubelet's pod hierarchy, a comma list of cgroup paths as the node's
 * init (pid 1) sees them; and kubelet's log directories: its podLogsDir
 * (default /var/log/pods) and the one of its links to the containers' logs
 * (/var/log/containers). */
#define EF_POD_ENV_KUBEPODS "EPOLLFIX_KUBEPODS"
#define EF_POD_ROOTS_DEFAULT "/kubepods.slice,/kubepods"
#define EF_POD_ENV_KUBELET_POD_LOGS "EPOLLFIX_KUBELET_POD_LOGS"
#define EF_POD_ENV_KUBELET_CONTAINER_LOGS "EPOLLFIX_KUBELET_CONTAINER_LOGS"

/* The variables the chart injects (deploy/helm/epollfix): the uid is the
 * pod's opt-in (`agent --pods`); the names are not believed. */
#define EF_POD_ENV_NAMESPACE "EPOLLFIX_POD_NAMESPACE"
#define EF_POD_ENV_NAME "EPOLLFIX_POD_NAME"
#define EF_POD_ENV_CONTAINER "EPOLLFIX_CONTAINER_NAME"
#define EF_POD_ENV_UID "EPOLLFIX_POD_UID"

struct ef_pod {
	char ns[64];         /* a DNS label: at most 63 */
	char name[254];      /* a DNS subdomain: at most 253 */
	char container[64];  /* a DNS label */
	char uid[37];        /* 8-4-4-4-12 lowercase hex */
	char container_id[65]; /* 64 lowercase hex */
};

/* The roots of the pod hierarchy (a comma list; each a cgroup path) instead
 * of EPOLLFIX_KUBEPODS's, or its default, which are read at the first use. */
void ef_pod_set_roots(const char *list);

/* The pod's uid and the container's id from a cgroup path (up to a newline)
 * as the node's init sees it, when it is where kubelet makes a pod's cgroup
 * under root: "<root>/pod<uid>" or "<root>/<qos>/pod<uid>" (cgroupfs),
 * "<root>/<r>-pod<uid_>.slice" or "<root>/<r>-<qos>.slice/<r>-<qos>-pod<uid_>.slice"
 * where root ends in "<r>.slice" (systemd); the container's below it.
 * Returns 1 when a pod was found (uid set; container_id when the path names
 * one), else 0 with both empty. ef_pod_from_cgroup: under any root. */
int ef_pod_under(const char *path, size_t n, const char *root, struct ef_pod *p);
int ef_pod_from_cgroup(const char *path, struct ef_pod *p);

/* Each whole line of the contents of /proc/PID/cgroup (len bytes; a line cut
 * by the read's bound is not taken): fn gets its path (n bytes, not
 * NUL-terminated) and whether it is cgroup v2's ("0::PATH"); the first
 * non-zero fn returns ends the walk and is returned. */
int ef_cgroup_lines(const char *file, size_t len,
		    int (*fn)(const char *path, size_t n, int v2, void *arg), void *arg);

/* The same from the contents of /proc/PID/cgroup (len bytes): the line that
 * names a pod, cgroup v2's first, else a v1 controller's, on a v1, v2 or
 * hybrid host. A line this reader sees from a cgroup namespace of its own
 * ("/../../<rest>", a pod's view) is taken as the node's path: the rest when
 * it climbs as far as the node's init's line does, else the place under the
 * pod hierarchy's roots where the node's cgroup v2 hierarchy
 * (/proc/1/root/sys/fs/cgroup) lists process pid (pid 0: not taken). That
 * line's path as read (else v2's, else the first line's) goes into path,
 * NUL-terminated; a line of size bytes or more, or cut by the read, is not
 * taken. Returns 1 when a pod was found. */
int ef_pod_from_cgroups(long pid, const char *file, size_t len, struct ef_pod *p, char *path,
			size_t size);

/* What a process's environment says of it: the variables the policy injects,
 * and the LD_PRELOAD entry that names a libepollfix (the library it was
 * given, whether or not it is loaded). */
struct ef_pod_env {
	char ns[64], name[254], container[64], uid[37];
	char preload[PATH_MAX]; /* "" when LD_PRELOAD names none */
};

/* From an environment block as /proc/PID/environ holds it: len bytes of
 * NUL-separated NAME=value strings (the last may be cut, and is then not
 * taken). A name too long or with a character a Kubernetes name cannot hold,
 * a uid not of the uid's form, is ignored. Returns how many were found. */
int ef_pod_env_parse(const char *env, size_t len, struct ef_pod_env *e);

/* The names of the pod whose uid p holds, and of its container whose id p
 * holds, from kubelet's log directories: how many (0, 2 or 3). */
int ef_pod_node_names(struct ef_pod *p);

/* The environment of process pid, its first EF_POD_ENVIRON_MAX bytes: 0, or
 * -1 (e empty) when it cannot be read. */
#define EF_POD_ENVIRON_MAX (256 * 1024)
int ef_pod_env_of(long pid, struct ef_pod_env *e);

/* "namespace/pod/container", else "pod-uid/container-id's first 12", else "-". */
void ef_pod_short(const struct ef_pod *p, char *out, size_t size);

#endif
