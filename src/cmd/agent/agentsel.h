/* Which processes `epollfix agent` serves (doc/agent.md): by the path of the
 * executable (--path), by cgroup (--cgroup), by systemd unit (--unit), by
 * Kubernetes pod opt-in (--pods), or all (--all); a process is served when
 * any of them chooses it. What is read of a process (its cgroup file, its
 * environment) is its own and hostile: bounded, and only whole lines or
 * strings are taken (pod.h). */
#ifndef EPOLLFIX_AGENTSEL_H
#define EPOLLFIX_AGENTSEL_H

#include <stddef.h>

#define EF_SEL_MAX 16 /* values of each option */

struct ef_sel {
	int all, pods;
	const char *path[EF_SEL_MAX];
	char cgroup[EF_SEL_MAX][4096]; /* without a trailing slash; "" is the root */
	char unit[EF_SEL_MAX][256];
	int npath, ncgroup, nunit;
};

/* One option of the agent's command line, "--NAME=VALUE" or "--NAME": 1 when
 * it is a selection option (taken; a bad value was refused with one warning
 * line on stderr naming the option, the value and what is done instead), 0
 * when it is none. */
int ef_sel_option(struct ef_sel *s, const char *arg);

/* Whether anything at all is chosen. */
int ef_sel_any(const struct ef_sel *s);

/* Whether the process is chosen: exe its executable's path, cgroups the
 * contents of /proc/PID/cgroup (len bytes; read only when a cgroup, unit or
 * pod is asked for, see ef_sel_needs_cgroup), environ its environment's
 * (read only when --pods and the cgroup names a pod: environ is then called
 * to fetch it, and returns 0 or -1). */
int ef_sel_needs_cgroup(const struct ef_sel *s);
int ef_sel_chosen(const struct ef_sel *s, long pid, const char *exe, const char *cgroups,
		  size_t len);

/* 0 when the process is certainly not chosen, from what reading it cannot
 * block on (its executable's path as its link names it, its cgroup file:
 * the kernel's own text): the agent's loop asks its reader about no other.
 * 1 when it may be (ef_sel_chosen then reads the rest: the file at exe, its
 * environment). */
int ef_sel_may_choose(const struct ef_sel *s, long pid, const char *exe, const char *cgroups,
		      size_t len);

/* Whether exe, the path /proc/PID/exe gives (the process's own mount
 * namespace's), names in this one the file the process runs (the same device
 * and inode): --path's choice is of the files this namespace holds there. */
int ef_sel_exe_is(long pid, const char *exe);

/* Pure helpers, for the unit tests: whether one cgroup line's path is under
 * prefix (itself or below it), whether it is in the system unit unit (a
 * component that is unit, with only slices above it). */
int ef_sel_under(const char *path, size_t n, const char *prefix);
int ef_sel_in_unit(const char *path, size_t n, const char *unit);

#endif
