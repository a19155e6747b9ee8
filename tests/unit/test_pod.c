/* A process's pod from its cgroup path and its environment (src/cmd/look/pod.c):
 * the path shapes kubelet and the runtimes make (containerd and CRI-O, the
 * systemd and cgroupfs drivers, every QoS class) under the pod hierarchy's
 * roots only, in whichever line of /proc/PID/cgroup; what the environment
 * says (the opt-in's uid, the library); and hostile values. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "pod.h"

#define UID "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define UID_ "0a1b2c3d_4e5f_6789_abcd_ef0123456789"
#define ID "47e320f795efcec1ecf2001c3a09c95e3701ed87de8256837b70b10e23818251"

static void expect(const char *path, const char *uid, const char *id)
{
	struct ef_pod p;
	memset(&p, 'x', sizeof(p));
	int found = ef_pod_from_cgroup(path, &p);
	cr_expect_eq(found, uid[0] != '\0', "%s: found %d", path, found);
	cr_expect_str_eq(p.uid, uid, "%s", path);
	cr_expect_str_eq(p.container_id, id, "%s", path);
}

Test(pod, containerd_systemd_driver_every_qos_class)
{
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/cri-containerd-" ID ".scope", UID, ID);
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	       ".slice/cri-containerd-" ID ".scope", UID, ID);
	/* Guaranteed pods sit right under kubepods.slice. */
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope", UID, ID);
}

Test(pod, containerd_cgroupfs_driver)
{
	expect("/kubepods/burstable/pod" UID "/" ID, UID, ID);
	expect("/kubepods/besteffort/pod" UID "/" ID, UID, ID);
	expect("/kubepods/pod" UID "/" ID, UID, ID);
}

Test(pod, crio_both_drivers_and_its_monitor_left_out)
{
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/crio-" ID ".scope", UID, ID);
	expect("/kubepods/besteffort/pod" UID "/crio-" ID, UID, ID);
	/* conmon runs in the pod's slice, but it is CRI-O's, not the container. */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/crio-conmon-" ID ".scope", UID, "");
}

Test(pod, a_runtime_scope_named_inside_the_pod_slice)
{
	/* containerd's systemd cgroups path, "slice:prefix:name", as cgroup v1 shows it. */
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	       ".slice:cri-containerd:" ID, UID, ID);
}

Test(pod, a_kubelet_whose_cgroup_root_is_its_own_slice)
{
	/* kind's nodes: kubelet's cgroup root /kubelet, its pods under
	 * kubelet-kubepods.slice, once that is the root given. */
	static const char kind[] = "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
				   "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope";
	expect(kind, "", "");
	ef_pod_set_roots("/kubelet.slice/kubelet-kubepods.slice/");
	expect(kind, UID, ID);
	expect("/kubepods/pod" UID "/" ID, "", "");
	ef_pod_set_roots(EF_POD_ROOTS_DEFAULT);
}

Test(pod, only_where_kubelet_makes_a_pod)
{
	/* A pod's name anywhere else is whoever made that cgroup's: a user's
	 * delegated subtree, a service's, a pod's own container. */
	expect("/user.slice/user-1000.slice/user@1000.service/kubepods/pod" UID "/" ID, "", "");
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/kubepods-pod" UID_
	       ".slice/cri-containerd-" ID ".scope", "", "");
	expect("/kubepods/burstable/pod11111111-2222-3333-4444-555555555555/" ID "/kubepods/pod" UID
	       "/" ID, "11111111-2222-3333-4444-555555555555", ID);
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-pod" UID_ ".slice", "", "");
	expect("/kubepods.slice/kubepods-besteffort-pod" UID_ ".slice", "", "");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" UID_ ".slice", "", "");
	expect("/kubepods/burstable/besteffort/pod" UID, "", "");
	expect("/kubepods/other/pod" UID, "", "");
	expect("/kubepodsx/pod" UID, "", "");
	/* The systemd driver's uid has underscores; cgroupfs's dashes. */
	expect("/kubepods.slice/kubepods-pod" UID ".slice", "", "");
	expect("/kubepods/pod" UID_, "", "");
}

Test(pod, seen_from_inside_another_cgroup_namespace)
{
	/* An agent in its own pod sees the node's paths relative to its own
	 * cgroup: they name the node's place only with the process's pid
	 * (ef_pod_from_cgroups), not alone. */
	expect("/../../kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope", "", "");
	expect("/../../pod" UID "/" ID, "", "");
}

Test(pod, the_pod_alone_when_the_container_is_not_named)
{
	/* The pod's slice itself (a process in no container's scope yet). */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice", UID, "");
	expect("/kubepods/burstable/pod" UID, UID, "");
	/* A container cgroup that is no id. */
	expect("/kubepods/burstable/pod" UID "/not-an-id", UID, "");
}

Test(pod, no_pod_on_the_host_or_in_other_runtimes)
{
	expect("/", "", "");
	expect("", "", "");
	expect("/user.slice/user-0.slice/session-3.scope", "", "");
	expect("/system.slice/docker-" ID ".scope", "", "");
	expect("/kubepods.slice/kubepods-burstable.slice", "", "");
	expect("/kubepods/burstable", "", "");
	/* A slice named like a pod but not kubelet's, and cut or bad uids. */
	expect("/system.slice/app-pod" UID_ ".slice/cri-containerd-" ID ".scope", "", "");
	expect("/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef012345678/" ID, "", "");
	expect("/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-EF0123456789/" ID, "", "");
	expect("/kubepods/burstable/pod0a1b2c3d+4e5f-6789-abcd-ef0123456789/" ID, "", "");
	expect("/kubepods.slice/kubepods-pod" UID_ ".slicex/cri-containerd-" ID ".scope", "", "");
}

Test(pod, a_container_id_of_any_other_length_is_not_taken)
{
	expect("/kubepods/pod" UID "/" ID "0", UID, "");
	expect("/kubepods/pod" UID "/cri-containerd-47e320f795.scope", UID, "");
	expect("/kubepods/pod" UID "/cri-containerd-" ID "\n0::/other", UID, ID);
}

/* The contents of /proc/PID/cgroup: the pod's line, wherever it lies. */
static int from_file(const char *file, struct ef_pod *p, char *path, size_t size)
{
	memset(p, 'x', sizeof(*p));
	return ef_pod_from_cgroups(0, file, strlen(file), p, path, size);
}

#define POD_V2 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ \
	".slice/cri-containerd-" ID ".scope"
#define POD_V1 "/kubepods/besteffort/pod" UID "/" ID

Test(pod, the_line_that_names_the_pod_on_a_hybrid_host)
{
	struct ef_pod p;
	char path[4096];
	/* This machine's shape: v1 controllers first, v2's line last. */
	cr_expect_eq(from_file("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/49cb\n1:cpu:/\n"
			       "0::" POD_V2 "\n", &p, path, sizeof(path)), 1);
	cr_expect_str_eq(path, POD_V2);
	cr_expect_str_eq(p.uid, UID);
	cr_expect_str_eq(p.container_id, ID);
	/* The pod in one v1 controller only, v2 at the root. */
	cr_expect_eq(from_file("9:name=systemd:/\n8:pids:" POD_V1 "\n1:cpu,cpuacct:/\n0::/\n", &p,
			       path, sizeof(path)), 1);
	cr_expect_str_eq(path, POD_V1);
	cr_expect_str_eq(p.uid, UID);
	/* v2's line wins over a v1 line that names another pod. */
	cr_expect_eq(from_file("8:pids:/kubepods/pod11111111-2222-3333-4444-555555555555\n0::" POD_V2
			       "\n", &p, path, sizeof(path)), 1);
	cr_expect_str_eq(p.uid, UID);
	cr_expect_str_eq(path, POD_V2);
}

Test(pod, v1_alone_v2_alone_and_no_pod)
{
	struct ef_pod p;
	char path[4096];
	cr_expect_eq(from_file("0::" POD_V2 "\n", &p, path, sizeof(path)), 1);
	cr_expect_str_eq(p.container_id, ID);
	cr_expect_eq(from_file("12:cpu,cpuacct:" POD_V1 "\n11:pids:" POD_V1 "\n", &p, path, sizeof(path)), 1);
	cr_expect_str_eq(path, POD_V1);
	/* No pod: v2's path, else the first line's. */
	cr_expect_eq(from_file("9:name=systemd:/a\n0::/system.slice/x.service\n", &p, path, sizeof(path)), 0);
	cr_expect_str_eq(path, "/system.slice/x.service");
	cr_expect_str_eq(p.uid, "");
	cr_expect_eq(from_file("9:name=systemd:/a\n8:pids:/b\n", &p, path, sizeof(path)), 0);
	cr_expect_str_eq(path, "/a");
	cr_expect_eq(from_file("", &p, path, sizeof(path)), 0);
	cr_expect_str_eq(path, "");
}

Test(pod, paths_of_any_length_the_kernel_writes)
{
	struct ef_pod p;
	static char file[8192], path[4096];
	/* kind's shape under a node's own scope (its root given): far past
	 * 255 bytes. */
	const char *pre = "0::/system.slice/docker-" ID ".scope/kubelet.slice/kubelet-kubepods.slice/"
			  "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UID_
			  ".slice/cri-containerd-" ID ".scope\n";
	cr_assert_gt(strlen(pre) - 4, 293);
	ef_pod_set_roots("/system.slice/docker-" ID ".scope/kubelet.slice/kubelet-kubepods.slice");
	cr_expect_eq(from_file(pre, &p, path, sizeof(path)), 1);
	cr_expect_eq(strlen(path), strlen(pre) - 4);
	cr_expect_str_eq(p.container_id, ID);
	/* A path as long as PATH_MAX allows, the pod at its end. */
	size_t n = 0, r = 0;
	static char deep[4096];
	while (r < 3900)
		r += (size_t)snprintf(deep + r, sizeof(deep) - r, "/deep");
	r += (size_t)snprintf(deep + r, sizeof(deep) - r, "/kubepods");
	ef_pod_set_roots(deep);
	n += (size_t)snprintf(file + n, sizeof(file) - n, "0::%s", deep);
	n += (size_t)snprintf(file + n, sizeof(file) - n, "/pod" UID "/" ID "\n");
	cr_assert_lt(n - 3, sizeof(path));
	cr_expect_eq(from_file(file, &p, path, sizeof(path)), 1);
	cr_expect_str_eq(p.container_id, ID);
	/* Longer than the room for it: not taken, nor cut. */
	cr_expect_eq(from_file(file, &p, path, 200), 0);
	cr_expect_str_eq(path, "");
	/* A last line cut by the read (no newline) is not read. */
	ef_pod_set_roots(EF_POD_ROOTS_DEFAULT);
	cr_expect_eq(from_file("9:name=systemd:/\n0::" POD_V2, &p, path, sizeof(path)), 0);
	cr_expect_str_eq(path, "/");
}

static int environ_of(const char *block, size_t len, struct ef_pod_env *e)
{
	memset(e, 'x', sizeof(*e));
	return ef_pod_env_parse(block, len, e);
}

#define ENV(s) s, sizeof(s) /* with the last string's NUL */

Test(pod, names_from_the_injected_variables)
{
	struct ef_pod_env e;
	int n = environ_of(ENV("PATH=/bin\0EPOLLFIX_POD_NAMESPACE=shop\0HOME=/\0"
			       "EPOLLFIX_POD_NAME=web-7d9f-x2k4\0EPOLLFIX_CONTAINER_NAME=app\0"
			       "EPOLLFIX_POD_UID=" UID "\0"), &e);
	cr_expect_eq(n, 4);
	cr_expect_str_eq(e.ns, "shop");
	cr_expect_str_eq(e.name, "web-7d9f-x2k4");
	cr_expect_str_eq(e.container, "app");
	cr_expect_str_eq(e.uid, UID);
	cr_expect_str_eq(e.preload, "");
}

Test(pod, the_opt_ins_uid_only_of_the_uids_form)
{
	struct ef_pod_env e;
	/* A uid of another form (cut, with more after it) is no uid. */
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_UID=" UID "0\0"), &e), 0);
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_UID=0a1b2c3d-4e5f-6789-abcd-ef012345678\0"), &e), 0);
	cr_expect_str_eq(e.uid, "");
}

Test(pod, the_library_ld_preload_names)
{
	struct ef_pod_env e;
	cr_expect_eq(environ_of(ENV("LD_PRELOAD=/epollfix/glibc/libepollfix.so\0"), &e), 1);
	cr_expect_str_eq(e.preload, "/epollfix/glibc/libepollfix.so");
	/* Appended to another, split on colons and blanks as the loaders do. */
	environ_of(ENV("LD_PRELOAD=/x/libjemalloc.so:/epollfix/musl/libepollfix.so\0"), &e);
	cr_expect_str_eq(e.preload, "/epollfix/musl/libepollfix.so");
	environ_of(ENV("LD_PRELOAD=/x/liba.so  libepollfix.so.0 /y/libb.so\0"), &e);
	cr_expect_str_eq(e.preload, "libepollfix.so.0");
	/* None of the library's. */
	cr_expect_eq(environ_of(ENV("LD_PRELOAD=/x/libjemalloc.so:/libepollfix/x.so:/y/libepollfixed\0"), &e), 0);
	cr_expect_str_eq(e.preload, "");
	/* A value cut by the read is not taken. */
	static const char cut[] = "LD_PRELOAD=/epollfix/glibc/libepollfix.so";
	cr_expect_eq(environ_of(cut, sizeof(cut) - 1, &e), 0);
	cr_expect_str_eq(e.preload, "");
}

Test(pod, hostile_values_are_not_taken)
{
	struct ef_pod_env e;
	char big[600];
	/* A pod name longer than a DNS subdomain may be. */
	memcpy(big, "EPOLLFIX_POD_NAME=", 18);
	memset(big + 18, 'a', 300);
	big[318] = '\0';
	cr_expect_eq(environ_of(big, 319, &e), 0);
	cr_expect_str_eq(e.name, "");
	/* Quotes, newlines, uppercase, escapes, an empty value. */
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAMESPACE=a\"b\0EPOLLFIX_POD_NAME=x\ny\0"
				    "EPOLLFIX_CONTAINER_NAME=App\0"), &e), 0);
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAMESPACE=\0EPOLLFIX_POD_NAME=a\\b\0"), &e), 0);
	cr_expect_str_eq(e.ns, "");
	cr_expect_str_eq(e.container, "");
	/* A prefix of the name is not the name. */
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAMESPACEX=shop\0XEPOLLFIX_POD_NAME=web\0"), &e), 0);
}

Test(pod, a_string_cut_by_the_bound_is_not_taken)
{
	struct ef_pod_env e;
	/* The read stopped inside the value: "shop" may be "shopping". */
	static const char block[] = "EPOLLFIX_POD_NAME=web\0EPOLLFIX_POD_NAMESPACE=shop";
	cr_expect_eq(environ_of(block, sizeof(block) - 1, &e), 1);
	cr_expect_str_eq(e.name, "web");
	cr_expect_str_eq(e.ns, "");
}

Test(pod, the_first_of_twice_the_same_variable)
{
	struct ef_pod_env e;
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAME=one\0EPOLLFIX_POD_NAME=two\0"), &e), 1);
	cr_expect_str_eq(e.name, "one");
}

Test(pod, short_names)
{
	struct ef_pod p = { .ns = "shop", .name = "web-1", .container = "app" };
	char out[512];
	ef_pod_short(&p, out, sizeof(out));
	cr_expect_str_eq(out, "shop/web-1/app");
	memset(&p, 0, sizeof(p));
	strcpy(p.uid, UID);
	strcpy(p.container_id, ID);
	ef_pod_short(&p, out, sizeof(out));
	cr_expect_str_eq(out, "pod" UID "/47e320f795ef");
	memset(&p, 0, sizeof(p));
	ef_pod_short(&p, out, sizeof(out));
	cr_expect_str_eq(out, "-");
}
