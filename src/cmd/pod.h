/* Which Kubernetes pod and container a process runs in, as `epollfix status`
 * names it: from the variables the chart's admission policy adds to a
 * container (the downward API: namespace, pod name, container name), else from
 * the process's cgroup path, which holds only the pod's uid and the
 * container's id (kube-state-metrics' kube_pod_container_info joins them to
 * names). Everything here is another process's and hostile: the functions are
 * pure, bounded, and keep only values of the characters Kubernetes allows. */
#ifndef EPOLLFIX_POD_H
#define EPOLLFIX_POD_H

#include <stddef.h>

/* The variables the chart injects (deploy/helm/epollfix). */
#define EF_POD_ENV_NAMESPACE "EPOLLFIX_POD_NAMESPACE"
#define EF_POD_ENV_NAME "EPOLLFIX_POD_NAME"
#define EF_POD_ENV_CONTAINER "EPOLLFIX_CONTAINER_NAME"

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

/* The names from an environment block as /proc/PID/environ holds it: len bytes
 * of NUL-separated NAME=value strings (the last may be cut). A value too long
 * or with a character a Kubernetes name cannot hold is ignored. Returns how
 * many of the three were found. */
int ef_pod_from_environ(const char *env, size_t len, struct ef_pod *p);

/* Both, for process pid whose cgroup path is already read: ns, name and
 * container from /proc/PID/environ (its first EF_POD_ENVIRON_MAX bytes), uid
 * and container_id from the path. */
#define EF_POD_ENVIRON_MAX (256 * 1024)
void ef_pod_of(long pid, const char *cgroup, struct ef_pod *p);

/* "namespace/pod/container", else "pod-uid/container-id's first 12", else "-". */
void ef_pod_short(const struct ef_pod *p, char *out, size_t size);

#endif
