/* Which processes the agent serves (src/cmd/agent/agentsel.c): its options'
 * values, refused in one line each, and the choice by cgroup, unit and pod
 * from /proc/PID/cgroup's lines (v2's and v1's), whole lines only. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentsel.h"

#define UID "0a1b2c3d-4e5f-6789-abcd-ef0123456789"

Test(agentsel, under_a_cgroup_is_itself_or_below_never_a_sibling)
{
	cr_expect(ef_sel_under("/a/b", 4, "/a/b"));
	cr_expect(ef_sel_under("/a/b/c", 6, "/a/b"));
	cr_expect(!ef_sel_under("/a/bc", 5, "/a/b"));
	cr_expect(!ef_sel_under("/a", 2, "/a/b"));
	cr_expect(ef_sel_under("/anything", 9, "")); /* "/" given: the root */
}

Test(agentsel, in_a_unit_is_a_component_of_the_path)
{
	cr_expect(ef_sel_in_unit("/system.slice/api.service", 25, "api.service"));
	cr_expect(ef_sel_in_unit("/system.slice/api.service/worker", 32, "api.service"));
	cr_expect(!ef_sel_in_unit("/system.slice/api.service2", 26, "api.service"));
	cr_expect(!ef_sel_in_unit("/system.slice/xapi.service", 26, "api.service"));
	cr_expect(ef_sel_in_unit("/user.slice/u.slice", 19, "user.slice"));
	cr_expect(ef_sel_in_unit("/a.slice/a-b.slice/api.service", 30, "api.service"));
}

Test(agentsel, a_unit_is_only_where_the_system_manager_puts_one)
{
	/* A user's manager's units, a delegated subtree: their owners' names. */
	static const char user[] = "/user.slice/user-1000.slice/user@1000.service/app.slice/api.service";
	cr_expect(!ef_sel_in_unit(user, strlen(user), "api.service"));
	cr_expect(!ef_sel_in_unit(user, strlen(user), "app.slice"));
	cr_expect(ef_sel_in_unit(user, strlen(user), "user@1000.service"));
	cr_expect(!ef_sel_in_unit("/system.slice/docker.service/api.service", 40, "api.service"));
	cr_expect(!ef_sel_in_unit("/test/api.service", 17, "api.service"));
}

static struct ef_sel sel;

static void parse(const char *arg)
{
	cr_assert(ef_sel_option(&sel, arg), "%s", arg);
}

Test(agentsel, options_lists_and_defaults)
{
	memset(&sel, 0, sizeof(sel));
	cr_expect(!ef_sel_option(&sel, "--quiet"));
	cr_expect(!ef_sel_any(&sel));
	parse("--cgroup=/system.slice/, /kubepods");
	parse("--unit=api,worker.service ,x.slice");
	cr_expect_eq(sel.ncgroup, 2);
	cr_expect_str_eq(sel.cgroup[0], "/system.slice");
	cr_expect_str_eq(sel.cgroup[1], "/kubepods");
	cr_expect_eq(sel.nunit, 3);
	cr_expect_str_eq(sel.unit[0], "api.service");
	cr_expect_str_eq(sel.unit[1], "worker.service");
	cr_expect_str_eq(sel.unit[2], "x.slice");
	cr_expect(ef_sel_any(&sel));
	cr_expect(ef_sel_needs_cgroup(&sel));
}

Test(agentsel, a_bad_value_is_one_line_naming_option_value_and_what_is_done, .init = cr_redirect_stderr)
{
	memset(&sel, 0, sizeof(sel));
	parse("--cgroup=relative");
	parse("--unit=a/b");
	parse("--path=bin/");
	parse("--unit=");
	cr_expect(!ef_sel_any(&sel));
	fflush(stderr);
	cr_expect_stderr_eq_str(
		"epollfix agent: warning: --cgroup='relative' is not an absolute cgroup path (like /system.slice/app.service): ignored\n"
		"epollfix agent: warning: --unit='a/b' is not a unit's name (like app.service): ignored\n"
		"epollfix agent: warning: --path='bin/' is not an absolute path: ignored\n"
		"epollfix agent: warning: --unit='' is empty: ignored\n");
}

Test(agentsel, chosen_by_v2_or_any_v1_line_whole_lines_only)
{
	static const char hybrid[] = "12:pids:/batch/job\n0::/system.slice/api.service\n";
	memset(&sel, 0, sizeof(sel));
	parse("--cgroup=/batch");
	cr_expect(ef_sel_chosen(&sel, 1, "/bin/x", hybrid, strlen(hybrid)));
	memset(&sel, 0, sizeof(sel));
	parse("--unit=api");
	cr_expect(ef_sel_chosen(&sel, 1, "/bin/x", hybrid, strlen(hybrid)));
	/* The last line cut by the read's bound: not taken. */
	cr_expect(!ef_sel_chosen(&sel, 1, "/bin/x", hybrid, strlen(hybrid) - 1));
	memset(&sel, 0, sizeof(sel));
	parse("--unit=other");
	static char self[4096], arg[4096 + 8];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert(n > 0);
	self[n] = '\0';
	snprintf(arg, sizeof(arg), "--path=%.*s", (int)(strrchr(self, '/') - self + 1), self);
	parse(arg);
	cr_expect(!ef_sel_chosen(&sel, getpid(), "/bin/x", hybrid, strlen(hybrid)));
	cr_expect(ef_sel_chosen(&sel, getpid(), self, hybrid, strlen(hybrid)));
}

Test(agentsel, a_path_chooses_the_file_this_namespace_has_there)
{
	/* What the process's own namespace calls the path is not enough: the
	 * file at that path here must be the one it runs. */
	static char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert(n > 0);
	self[n] = '\0';
	cr_expect(ef_sel_exe_is(getpid(), self));
	cr_expect(!ef_sel_exe_is(getpid(), "/bin/sh"));
	cr_expect(!ef_sel_exe_is(getpid(), "/no/such/file"));
}

Test(agentsel, pods_not_chosen_without_a_pod_cgroup)
{
	/* No pod in the cgroup: the environment is not even read (pid 0 would
	 * be this process's own, which has no pod uid either way). */
	static const char host[] = "0::/user.slice/session-1.scope\n";
	memset(&sel, 0, sizeof(sel));
	parse("--pods");
	cr_expect(!ef_sel_chosen(&sel, 999999999, "/bin/x", host, strlen(host)));
}
