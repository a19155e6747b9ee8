/* Which Kubernetes pod and container a process runs in, as `epollfix status`
 * names it. What the process's cgroup path says comes first: the pod's uid
 * and the container's id, written by kubelet and the runtime, which the
 * process cannot change. The names (namespace, pod, container) come from the
 * variables the chart's admission policy adds by the downward API, and the
 * process owns its environment: they are taken only when the pod uid there
 * (EPOLLFIX_POD_UID) is the cgroup's, so a process cannot name itself into
 * another pod by its variables alone; otherwise no name is shown
 * (kube-state-metrics' kube_pod_container_info joins the uid and the id to
 * names). Everything here is another process's and hostile: the functions are
 * pure, bounded, and keep only values of the characters Kubernetes allows. */
#ifndef EPOLLFIX_POD_H
#define EPOLLFIX_POD_H

#include <limits.h>
#include <stddef.h>

/* The variables the chart injects (deploy/helm/epollfix). */
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

/* The pod's uid and the container's id from a cgroup path as /proc/PID/cgroup
 * shows it (the host's view, or under "/../.." from inside another cgroup
 * namespace): containerd or CRI-O, kubelet's systemd or cgroupfs driver.
 * Returns 1 when a pod was found (uid set; container_id when the path names
 * one), else 0 with both empty. */
int ef_pod_from_cgroup(const char *path, struct ef_pod *p);

/* Each whole line of the contents of /proc/PID/cgroup (len bytes; a line cut
 * by the read's bound is not taken): fn gets its path (n bytes, not
 * NUL-terminated) and whether it is cgroup v2's ("0::PATH"); the first
 * non-zero fn returns ends the walk and is returned. */
int ef_cgroup_lines(const char *file, size_t len,
		    int (*fn)(const char *path, size_t n, int v2, void *arg), void *arg);

/* The same from the contents of /proc/PID/cgroup (len bytes): the line that
 * names a pod, cgroup v2's first, else a v1 controller's, on a v1, v2 or
 * hybrid host. That line's path (else v2's, else the first line's) goes into
 * path, NUL-terminated; a line of size bytes or more, or cut by the read, is
 * not taken. Returns 1 when a pod was found. */
int ef_pod_from_cgroups(const char *file, size_t len, struct ef_pod *p, char *path, size_t size);

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

/* The environment's names into p (whose uid the cgroup gave) when its uid is
 * p's; else none. Returns how many names were taken. */
int ef_pod_take_names(struct ef_pod *p, const struct ef_pod_env *e);

/* The environment of process pid, its first EF_POD_ENVIRON_MAX bytes: 0, or
 * -1 (e empty) when it cannot be read. */
#define EF_POD_ENVIRON_MAX (256 * 1024)
int ef_pod_env_of(long pid, struct ef_pod_env *e);

/* "namespace/pod/container", else "pod-uid/container-id's first 12", else "-". */
void ef_pod_short(const struct ef_pod *p, char *out, size_t size);

#endif
