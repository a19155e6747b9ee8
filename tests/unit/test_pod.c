/* A process's pod from its cgroup path and its environment (src/cmd/pod.c):
 * the path shapes kubelet and the runtimes make (containerd and CRI-O, the
 * systemd and cgroupfs drivers, every QoS class), as the node sees them and
 * as an agent in its own cgroup namespace sees them, and hostile values. */
#include <criterion/criterion.h>
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
	/* A kubelet whose cgroup root is its own slice (kind's nodes). */
	expect("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	       "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope", UID, ID);
}

Test(pod, seen_from_inside_another_cgroup_namespace)
{
	/* An agent in its own pod: the node's paths relative to its own cgroup. */
	expect("/../../kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope", UID, ID);
	expect("/../../../kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/cri-containerd-" ID ".scope", UID, ID);
	expect("/../../pod" UID "/" ID, UID, ID);
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

static int environ_of(const char *block, size_t len, struct ef_pod *p)
{
	memset(p, 'x', sizeof(*p));
	return ef_pod_from_environ(block, len, p);
}

#define ENV(s) s, sizeof(s) /* with the last string's NUL */

Test(pod, names_from_the_injected_variables)
{
	struct ef_pod p;
	int n = environ_of(ENV("PATH=/bin\0EPOLLFIX_POD_NAMESPACE=shop\0HOME=/\0"
			       "EPOLLFIX_POD_NAME=web-7d9f-x2k4\0EPOLLFIX_CONTAINER_NAME=app\0"), &p);
	cr_expect_eq(n, 3);
	cr_expect_str_eq(p.ns, "shop");
	cr_expect_str_eq(p.name, "web-7d9f-x2k4");
	cr_expect_str_eq(p.container, "app");
}

Test(pod, hostile_values_are_not_taken)
{
	struct ef_pod p;
	char big[600];
	/* A pod name longer than a DNS subdomain may be. */
	memcpy(big, "EPOLLFIX_POD_NAME=", 18);
	memset(big + 18, 'a', 300);
	big[318] = '\0';
	cr_expect_eq(environ_of(big, 319, &p), 0);
	cr_expect_str_eq(p.name, "");
	/* Quotes, newlines, uppercase, escapes, an empty value. */
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAMESPACE=a\"b\0EPOLLFIX_POD_NAME=x\ny\0"
				    "EPOLLFIX_CONTAINER_NAME=App\0"), &p), 0);
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAMESPACE=\0EPOLLFIX_POD_NAME=a\\b\0"), &p), 0);
	cr_expect_str_eq(p.ns, "");
	cr_expect_str_eq(p.container, "");
	/* A prefix of the name is not the name. */
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAMESPACEX=shop\0XEPOLLFIX_POD_NAME=web\0"), &p), 0);
}

Test(pod, a_string_cut_by_the_bound_is_not_taken)
{
	struct ef_pod p;
	/* The read stopped inside the value: "shop" may be "shopping". */
	static const char block[] = "EPOLLFIX_POD_NAME=web\0EPOLLFIX_POD_NAMESPACE=shop";
	cr_expect_eq(environ_of(block, sizeof(block) - 1, &p), 1);
	cr_expect_str_eq(p.name, "web");
	cr_expect_str_eq(p.ns, "");
}

Test(pod, the_first_of_twice_the_same_variable)
{
	struct ef_pod p;
	cr_expect_eq(environ_of(ENV("EPOLLFIX_POD_NAME=one\0EPOLLFIX_POD_NAME=two\0"), &p), 1);
	cr_expect_str_eq(p.name, "one");
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
