#!/usr/bin/env bats
# epollfix on Kubernetes, without a cluster of nodes: the container image's
# files (scripts/package-image), the Helm chart rendered and validated for
# several Kubernetes versions, the admission policy run by a real kube-apiserver
# and etcd (pods are admitted and stored; no kubelet runs them), and
# `epollfix status` naming the pod of a process started in its own namespaces
# with the variables the policy injects, in a cgroup named as kubelet names one.
# The tools come from scripts/install-k8s-tools (build/k8s-tools/), which this
# file's setup runs: it builds what is missing, the first time, and nothing
# after (EPOLLFIX_K8S_TOOLS names a directory of tools of your own instead).

setup_file() {
	load helpers
	k8s_tools
	export CHART=$EPOLLFIX_SRC/deploy/helm/epollfix
}

setup() {
	load helpers
	cmd=$EPOLLFIX_CMD
	cgroups_file=$BATS_TEST_TMPDIR/cgroups
	: >"$cgroups_file"
}

teardown() {
	local c
	[ ! -f "$BATS_TEST_TMPDIR/cluster-dir" ] ||
		"$EPOLLFIX_SRC/tests/kubernetes/cluster" stop "$(cat "$BATS_TEST_TMPDIR/cluster-dir")"
	stop_tracked KILL
	# Deepest first: a cgroup goes only once it is empty and has no child.
	sort -r "$cgroups_file" | while read -r c; do rmdir "$c" 2>/dev/null || true; done
	[ ! -f "$BATS_TEST_TMPDIR/remove" ] || xargs -r rm -rf <"$BATS_TEST_TMPDIR/remove"
}

# The chart, the cluster and the image's files do not depend on the build the
# suite runs for: they are tested once, in the run for build/ (scripts/test's
# glibc build) or by hand, as tests/bats/packaging.bats does.
once() {
	if [ "$(realpath "$EPOLLFIX_BUILD")" != "$(realpath "$EPOLLFIX_SRC/build")" ]; then
		skip "tested in the run for build/ only (this is ${EPOLLFIX_BUILD##*/})"
	fi
}

tool() {
	[ -x "$K8S_TOOLS/bin/$1" ] ||
		skip_missing "no $1 in $K8S_TOOLS/bin: scripts/install-k8s-tools could not build it (needs Go and the module proxy; its logs: $K8S_TOOLS/*.log)"
}

validator() {
	[ -x "$K8S_TOOLS/venv/bin/kubernetes-validate" ] ||
		skip_missing "no kubernetes-validate in $K8S_TOOLS/venv: scripts/install-k8s-tools could not install it from PyPI"
}

# The glibc and the musl build side by side, for the image's two libraries.
both_builds() {
	once
	glibc_build=$EPOLLFIX_SRC/build musl_build=$EPOLLFIX_SRC/build-musl
	[ -f "$glibc_build/src/libepollfix.so" ] || skip "no glibc build in $glibc_build"
	[ -f "$musl_build/src/epollfix-static" ] ||
		skip "no musl build in $musl_build (musl-gcc: scripts/build makes it)"
}

@test "image: both libraries and a static command at fixed paths; each library loads into its own libc's program" {
	both_builds
	out=$BATS_TEST_TMPDIR/image
	run "$EPOLLFIX_SRC/scripts/package-image" "$out"
	assert_success
	# The layout's root is the image's root: mounted at /epollfix, as the
	# chart does, the files are where its LD_PRELOAD names them.
	img=$out
	# The Go agent's command too, when the glibc build has it (-Dbpf).
	local agent=
	[ ! -f "$glibc_build/src/epollfix-agent-static" ] || agent="./bin/epollfix-agent "
	[ "$(cd "$img" && find . -type f | sort | tr '\n' ' ')" = "./bin/epollfix ${agent}./glibc/libepollfix.so ./musl/libepollfix.so " ] ||
		fail "the image's files: $(cd "$img" && find . | sort)"
	if [ -n "$agent" ]; then
		run file "$img/bin/epollfix-agent"
		assert_output --partial "statically linked"
		run "$img/bin/epollfix-agent" agent --help
		assert_success
	fi
	for f in glibc/libepollfix.so musl/libepollfix.so bin/epollfix; do
		[ -f "$img/$f" ] || fail "no $f in the image"
	done
	run file "$img/bin/epollfix"
	assert_output --partial "statically linked"
	run file -L "$img/glibc/libepollfix.so" "$img/musl/libepollfix.so"
	assert_line --partial "shared object"
	run "$img/bin/epollfix" --version
	assert_success
	assert_output --regexp '^epollfix [0-9]'
	# Each build loads into a program of its libc and acts: its exit report.
	run env EPOLLFIX_STATS=1 LD_PRELOAD="$img/glibc/libepollfix.so" "$glibc_build/tests/progs/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9]'
	run env EPOLLFIX_STATS=1 LD_PRELOAD="$img/musl/libepollfix.so" "$musl_build/tests/progs/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9]'
	# The static command reads a running process of either libc.
	env LD_PRELOAD="$img/musl/libepollfix.so" "$musl_build/tests/progs/ef-sleep" --count 1000000 >/dev/null 2>&1 &
	track_pid $!
	for i in $(seq 50); do
		run "$img/bin/epollfix" status --json $!
		[ "$status" = 0 ] && break
		sleep 0.1
	done
	assert_success
	assert_output --partial '"program":"ef-sleep"'
}

@test "image: its command, run from wherever the image is mounted, preloads the library that fits each program and none into a static one" {
	both_builds
	out=$BATS_TEST_TMPDIR/mounted
	"$EPOLLFIX_SRC/scripts/package-image" "$out" >/dev/null
	# No library beside the command, nor where a meson install puts one.
	run "$out/bin/epollfix" --check "$glibc_build/tests/progs/ef-sleep"
	assert_line "library:      $out/glibc/libepollfix.so"
	run "$out/bin/epollfix" --check "$musl_build/tests/progs/ef-sleep"
	assert_line "library:      $out/musl/libepollfix.so"
	# Each program runs with its own libc's build: the other would stop it.
	run "$out/bin/epollfix" --stats=1 "$glibc_build/tests/progs/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9]'
	run "$out/bin/epollfix" --stats=1 "$musl_build/tests/progs/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9]'
	# A script: its interpreter's libc.
	printf '#!%s\nimport os; print(os.environ["LD_PRELOAD"])\n' "$(python_bin)" >"$BATS_TEST_TMPDIR/script"
	chmod +x "$BATS_TEST_TMPDIR/script"
	run "$out/bin/epollfix" "$BATS_TEST_TMPDIR/script"
	assert_success
	assert_output "$out/glibc/libepollfix.so"
	# A static program needs none, and is given none: the programs it starts
	# may be of either libc.
	local static=$BATS_TEST_TMPDIR/static
	printf '#include <stdio.h>\n#include <stdlib.h>\nint main(void) { const char *p = getenv("LD_PRELOAD"); puts(p ? p : "unset"); return 0; }\n' |
		cc -static -x c - -o "$static" 2>/dev/null || skip "no static libc (libc6-dev)"
	run "$out/bin/epollfix" --check "$static"
	assert_line "library:      none: a statically linked program loads none"
	run --separate-stderr env -u LD_PRELOAD "$out/bin/epollfix" "$static"
	assert_success
	assert_output unset
	[[ "$stderr" == *"is statically linked"* ]] || fail "no warning: $stderr"
	refute_output --partial "cannot find"
}

@test "image: a glibc build preloaded into a musl program stops it from starting, and the reverse (why the chart asks which containers are musl)" {
	both_builds
	# musl's loader exits 127 when a preloaded object's symbols do not resolve.
	run -127 env LD_PRELOAD="$glibc_build/src/libepollfix.so" "$musl_build/tests/progs/ef-sleep" --count 1
	assert_output --partial "symbol not found"
	# The reverse too: the musl build needs musl's libc.so, which glibc's
	# loader cannot load.
	run -127 env LD_PRELOAD="$musl_build/src/libepollfix.so" "$glibc_build/tests/progs/ef-sleep" --count 1
	assert_output --partial "error while loading shared libraries"
}

@test "image: copy-files fills an empty directory as the init container's user, with no shell" {
	both_builds
	# Where the init container's user may read: not under the test's own
	# temporary directory (mode 0700).
	out=$(mktemp -d /tmp/epollfix-image.XXXXXX)
	echo "$out" >>"$BATS_TEST_TMPDIR/remove"
	chmod 755 "$out"
	"$EPOLLFIX_SRC/scripts/package-image" "$out" >/dev/null
	dest=$out/emptydir
	mkdir -m 1777 "$dest"
	run setpriv --reuid=65532 --regid=65532 --clear-groups "$out/bin/epollfix" copy-files "$dest"
	assert_success
	for f in glibc/libepollfix.so musl/libepollfix.so bin/epollfix; do
		cmp "$out/$f" "$dest/$f" || fail "$f differs"
	done
	[ "$(stat -c %a "$dest/bin/epollfix")" = 755 ] && [ "$(stat -c %a "$dest/glibc/libepollfix.so")" = 644 ] ||
		fail "modes: $(stat -c '%a %n' "$dest"/*/*)"
	[ -z "$(find "$dest" -name '.*.tmp')" ] || fail "a temporary file is left"
	# Again over the copy (a restarted init container), then the mistakes.
	# The image's files only, not the rest of the directory above bin/ (in
	# the image, its root: /proc, /dev, what the runtime mounts).
	[ "$(cd "$dest" && find . -type f | sort | tr '\n' ' ')" = "./bin/epollfix ./glibc/libepollfix.so ./musl/libepollfix.so " ] ||
		fail "copied: $(cd "$dest" && find . | sort)"
	run "$out/bin/epollfix" copy-files "$dest"
	assert_success
	run "$out/bin/epollfix" copy-files "$out/missing"
	assert_failure 1
	assert_output --partial "missing: No such file or directory"
	run "$out/bin/epollfix" copy-files
	assert_failure 2
	# A command outside a tree's bin/ has nothing to copy.
	cp "$out/bin/epollfix" "$out/epollfix-alone"
	run "$out/epollfix-alone" copy-files "$dest"
	assert_failure 1
	assert_output --partial "not in a bin/ directory"
}

# render OUT ARGS...: helm template of the chart into OUT, one object a file.
render() {
	local out=$1
	shift
	mkdir -p "$out"
	"$K8S_TOOLS/bin/helm" template t "$CHART" --namespace epollfix "$@" >"$out/all.yaml" ||
		fail "helm template $*"
	python3 - "$out" <<'PY'
import sys, pathlib
out = pathlib.Path(sys.argv[1])
docs = [d for d in (out / "all.yaml").read_text().split("\n---\n") if d.strip() and "kind:" in d]
for i, d in enumerate(docs):
    (out / f"{i:02d}.yaml").write_text(d + "\n")
PY
}

# kinds OUT: the kinds rendered, sorted.
kinds() {
	sed -n 's/^kind: //p' "$1"/[0-9]*.yaml | sort | tr '\n' ' '
}

@test "helm: the chart lints and renders for 1.34 (v1beta1), 1.36 and 1.37, both modes, with and without the Prometheus Operator; every object valid (strict)" {
	once
	tool helm
	validator
	run "$K8S_TOOLS/bin/helm" lint "$CHART" --strict --kube-version 1.37.0
	assert_success
	run "$K8S_TOOLS/bin/helm" lint "$CHART" --strict --kube-version 1.36.0 --set injection.mode=initContainer
	assert_success
	local v mode op dir
	for v in 1.36.0 1.37.0; do
		for mode in image initContainer; do
			for op in "" monitoring.coreos.com/v1; do
				dir=$BATS_TEST_TMPDIR/$v-$mode-${op:+op}
				render "$dir" --kube-version "$v" --set injection.mode=$mode \
					${op:+--api-versions $op --set prometheusOperator.enabled=true}
				grep -q '^apiVersion: admissionregistration.k8s.io/v1$' "$dir/all.yaml" ||
					fail "$v: not the v1 API: $(grep apiVersion "$dir/all.yaml")"
				if [ -n "$op" ]; then
					[ "$(kinds "$dir")" = "DaemonSet MutatingAdmissionPolicy MutatingAdmissionPolicyBinding PodMonitor " ] ||
						fail "$v $mode with the operator: $(kinds "$dir")"
					! grep -q 'prometheus.io/scrape: "true"' "$dir/all.yaml" || fail "annotations beside the PodMonitor"
				else
					[ "$(kinds "$dir")" = "DaemonSet MutatingAdmissionPolicy MutatingAdmissionPolicyBinding " ] ||
						fail "$v $mode: $(kinds "$dir")"
					grep -q 'prometheus.io/scrape: "true"' "$dir/all.yaml" || fail "no scrape annotations"
				fi
				if [ "$mode" = initContainer ]; then
					grep -q 'emptyDir: Object.spec.volumes.emptyDir' "$dir/all.yaml" || fail "no emptyDir"
				else
					grep -q 'image: Object.spec.volumes.image' "$dir/all.yaml" || fail "no image volume"
				fi
				# kubernetes-validate knows Kubernetes' own kinds, not the
				# operator's: the PodMonitor is checked by its render above.
				for f in "$dir"/[0-9]*.yaml; do
					grep -q '^kind: PodMonitor$' "$f" && continue
					for k in "$v" 1.37.0; do
						run "$K8S_TOOLS/venv/bin/kubernetes-validate" --strict -k "$k" "$f"
						# A kind it has no schema for is only a warning: not enough.
						[ "$status" = 0 ] && [[ "$output" == *" passed for resource "* ]] ||
							fail "$f against $k: $output"
					done
				done
			done
		done
	done
	# 1.34 and 1.35 serve v1beta1 where it is turned on; without it, a plain
	# refusal that names the way out.
	render "$BATS_TEST_TMPDIR/1.34" --kube-version 1.34.0 \
		--api-versions admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy
	grep -q '^apiVersion: admissionregistration.k8s.io/v1beta1$' "$BATS_TEST_TMPDIR/1.34/all.yaml" || fail "1.34: not v1beta1"
	for f in "$BATS_TEST_TMPDIR"/1.34/[0-9]*.yaml; do
		run "$K8S_TOOLS/venv/bin/kubernetes-validate" --strict -k 1.34.0 "$f"
		[ "$status" = 0 ] && [[ "$output" == *" passed for resource "* ]] || fail "$f against 1.34: $output"
	done
	run "$K8S_TOOLS/bin/helm" template t "$CHART" --kube-version 1.35.0
	assert_failure
	assert_output --partial "serves no MutatingAdmissionPolicy API"
	run "$K8S_TOOLS/bin/helm" template t "$CHART" --kube-version 1.35.0 --set injection.enabled=false
	assert_success
	# No tag set: the image's is the chart's appVersion, the project's version.
	assert_output --partial "image: registry.example.com/epollfix:$(project_version)"
	# The operator asked for but not served: annotations, and NOTES says so.
	run "$K8S_TOOLS/bin/helm" template t "$CHART" --kube-version 1.37.0 --set prometheusOperator.enabled=true
	assert_success
	refute_output --partial "kind: PodMonitor"
	assert_output --partial 'prometheus.io/scrape: "true"'
}

# --- the admission, against a real kube-apiserver and etcd ---

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

kc() {
	"$K8S_TOOLS/bin/kubectl" --kubeconfig "$KUBECONFIG" "$@"
}

# etcd and kube-apiserver on 127.0.0.1, in $BATS_TEST_TMPDIR, as
# tests/kubernetes/cluster starts them (stopped by teardown): no node.
start_cluster() {
	local d=$BATS_TEST_TMPDIR/cluster
	echo "$d" >"$BATS_TEST_TMPDIR/cluster-dir"
	run "$EPOLLFIX_SRC/tests/kubernetes/cluster" start "$d" apiserver
	[ "$status" = 0 ] || fail "tests/kubernetes/cluster start: $output"
	# shellcheck source=/dev/null
	. "$d/env"
	export KUBECONFIG
	kc api-resources --api-group admissionregistration.k8s.io -o name | grep -q '^mutatingadmissionpolicies' ||
		fail "no MutatingAdmissionPolicy API served"
	for ns in shop epollfix strict; do
		kc get namespace "$ns" >/dev/null 2>&1 || kc create namespace "$ns" >/dev/null
	done
	kc label namespace strict pod-security.kubernetes.io/enforce=restricted >/dev/null
	# No controller manager: the service account controller's work by hand.
	for ns in default shop epollfix strict kube-system; do
		kc -n "$ns" create serviceaccount default >/dev/null 2>&1 || true
	done
}

# install_policy ARGS...: the chart's objects, as `helm install` would make them.
install_policy() {
	"$K8S_TOOLS/bin/helm" template t "$CHART" --namespace epollfix --kube-version 1.37.2 "$@" \
		>"$BATS_TEST_TMPDIR/chart.yaml" || fail "helm template"
	kc -n epollfix apply -f "$BATS_TEST_TMPDIR/chart.yaml" >/dev/null || fail "kubectl apply"
}

# pod FILE: creates the pod in FILE (YAML), prints nothing; the stored pod is read by stored.
create() {
	kc create -f - >/dev/null <<<"$1" || fail "kubectl create: $1"
}

# wait_policy JQ-TEST: waits until the policy as installed acts (it takes
# effect once the apiserver's informer has it), with probe pods.
wait_policy() {
	local i
	for i in $(seq 100); do
		create "apiVersion: v1
kind: Pod
metadata: {name: probe-$i, namespace: shop, annotations: {epollfix.io/inject: \"true\"}}
spec: {containers: [{name: c, image: busybox}]}"
		if kc -n shop get pod "probe-$i" -o json | python3 -c "import json,sys; p=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; then
			kc -n shop delete pod "probe-$i" --wait=false >/dev/null
			return 0
		fi
		kc -n shop delete pod "probe-$i" --wait=false >/dev/null
		sleep 0.3
	done
	fail "the policy never acted"
}

# stored NS NAME: the stored pod, abridged to what the policy may change
# (the service account's token volume left out), as sorted JSON.
stored() {
	kc -n "$1" get pod "$2" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
s = p["spec"]
def c(x):
    mounts = [m for m in x.get("volumeMounts", []) if not m["name"].startswith("kube-api-access")]
    x = dict(x, volumeMounts=mounts)
    return {k: x[k] for k in ("name", "env", "volumeMounts", "securityContext", "resources", "command") if x.get(k)}
out = {"annotations": {k: v for k, v in p["metadata"].get("annotations", {}).items() if k.startswith("epollfix.io/")},
       "volumes": [v for v in s.get("volumes", []) if not v["name"].startswith("kube-api-access")],
       "initContainers": [c(x) for x in s.get("initContainers", [])],
       "containers": [c(x) for x in s["containers"]]}
print(json.dumps(out, indent=1, sort_keys=True))'
}

# expect NS NAME JSON: the stored pod is exactly JSON (a Python literal).
expect_pod() {
	local got
	got=$(stored "$1" "$2")
	{ echo "== $1/$2"; echo "$got"; } >>"$specs"
	python3 -c '
import json, sys
got, want = json.loads(sys.argv[1]), json.loads(sys.argv[2])
if got != want:
    print("got:", json.dumps(got, sort_keys=True), "\nwant:", json.dumps(want, sort_keys=True))
    sys.exit(1)' "$got" "$3" || fail "$1/$2 stored differently"
}

@test "admission: a real kube-apiserver injects opted-in pods once, appends to LD_PRELOAD, leaves valueFrom, kube-system and the rest alone" {
	once
	tool helm
	tool etcd
	tool kube-apiserver
	tool kubectl
	command -v openssl >/dev/null || skip "no openssl"
	specs=$BATS_TEST_TMPDIR/stored-pods.txt
	start_cluster
	install_policy --set agent.enabled=true
	# The agent's DaemonSet is stored as rendered too (no node runs it).
	kc -n epollfix get daemonset t-epollfix-agent -o jsonpath='{.spec.template.spec.hostPID}' | grep -q true ||
		fail "no agent DaemonSet"
	wait_policy '"epollfix.io/injected" in p["metadata"]["annotations"]'

	local lib=/epollfix/glibc/libepollfix.so musl=/epollfix/musl/libepollfix.so
	# The image's tag is the chart's appVersion, which is the project's.
	local version
	version=$(project_version)
	local vol='{"name": "epollfix", "image": {"reference": "registry.example.com/epollfix:'$version'", "pullPolicy": "IfNotPresent"}}'
	local mount='{"name": "epollfix", "mountPath": "/epollfix", "readOnly": true}'
	ids() {
		echo '{"name": "EPOLLFIX_CONTAINER_NAME", "value": "'"$1"'"},
		      {"name": "EPOLLFIX_POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
		      {"name": "EPOLLFIX_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
		      {"name": "EPOLLFIX_POD_UID", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}}}'
	}
	local done_ann='{"epollfix.io/inject": "true", "epollfix.io/injected": "'$version'"}'

	# No annotation: untouched.
	create "apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: shop}
spec: {containers: [{name: app, image: busybox}]}"
	expect_pod shop plain '{"annotations": {}, "volumes": [], "initContainers": [], "containers": [{"name": "app"}]}'

	# Opted in: the volume, the mount, LD_PRELOAD and the identity.
	create "apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, annotations: {epollfix.io/inject: \"true\"}}
spec: {containers: [{name: app, image: busybox}]}"
	expect_pod shop web '{"annotations": '"$done_ann"', "volumes": ['"$vol"'], "initContainers": [],
		"containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "value": "'$lib'"}, '"$(ids app)"'],
		"volumeMounts": ['"$mount"']}]}'

	# The container's own LD_PRELOAD is kept, ours appended, its order kept.
	create "apiVersion: v1
kind: Pod
metadata: {name: jemalloc, namespace: shop, annotations: {epollfix.io/inject: \"true\"}}
spec: {containers: [{name: app, image: busybox, env: [{name: A, value: \"1\"}, {name: LD_PRELOAD, value: /x/libjemalloc.so}, {name: B, value: \"2\"}]}]}"
	expect_pod shop jemalloc '{"annotations": '"$done_ann"', "volumes": ['"$vol"'], "initContainers": [],
		"containers": [{"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "LD_PRELOAD", "value": "/x/libjemalloc.so:'$lib'"},
		{"name": "B", "value": "2"}, '"$(ids app)"'], "volumeMounts": ['"$mount"']}]}'

	# LD_PRELOAD from valueFrom: that container alone is left as it is.
	create "apiVersion: v1
kind: Pod
metadata: {name: fromref, namespace: shop, annotations: {epollfix.io/inject: \"true\"}}
spec: {containers: [{name: app, image: busybox, env: [{name: LD_PRELOAD, valueFrom: {configMapKeyRef: {name: preload, key: lib}}}]}, {name: side, image: busybox}]}"
	expect_pod shop fromref '{"annotations": '"$done_ann"', "volumes": ['"$vol"'], "initContainers": [],
		"containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "valueFrom": {"configMapKeyRef": {"name": "preload", "key": "lib"}}}]},
		{"name": "side", "env": [{"name": "LD_PRELOAD", "value": "'$lib'"}, '"$(ids side)"'], "volumeMounts": ['"$mount"']}]}'
	# ... and a pod with no other container is not changed at all.
	create "apiVersion: v1
kind: Pod
metadata: {name: fromref-only, namespace: shop, annotations: {epollfix.io/inject: \"true\"}}
spec: {containers: [{name: app, image: busybox, env: [{name: LD_PRELOAD, valueFrom: {configMapKeyRef: {name: preload, key: lib}}}]}]}"
	expect_pod shop fromref-only '{"annotations": {"epollfix.io/inject": "true"}, "volumes": [], "initContainers": [],
		"containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "valueFrom": {"configMapKeyRef": {"name": "preload", "key": "lib"}}}]}]}'

	# A musl container beside a glibc one, each given its own build.
	create "apiVersion: v1
kind: Pod
metadata: {name: mixed, namespace: shop, annotations: {epollfix.io/inject: \"true\", epollfix.io/musl: \" side , other\"}}
spec: {containers: [{name: app, image: debian}, {name: side, image: alpine}]}"
	expect_pod shop mixed '{"annotations": {"epollfix.io/inject": "true", "epollfix.io/injected": "'$version'", "epollfix.io/musl": " side , other"},
		"volumes": ['"$vol"'], "initContainers": [],
		"containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "value": "'$lib'"}, '"$(ids app)"'], "volumeMounts": ['"$mount"']},
		{"name": "side", "env": [{"name": "LD_PRELOAD", "value": "'$musl'"}, '"$(ids side)"'], "volumeMounts": ['"$mount"']}]}'

	# kube-system and the chart's own namespace: never.
	for ns in kube-system epollfix; do
		create "apiVersion: v1
kind: Pod
metadata: {name: sys, namespace: $ns, annotations: {epollfix.io/inject: \"true\"}}
spec: {containers: [{name: app, image: busybox}]}"
		expect_pod "$ns" sys '{"annotations": {"epollfix.io/inject": "true"}, "volumes": [], "initContainers": [], "containers": [{"name": "app"}]}'
	done

	# Admitted again: an injected pod's stored spec created anew is not injected twice.
	kc -n shop get pod jemalloc -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
p["metadata"] = {"name": "again", "namespace": "shop", "annotations": p["metadata"]["annotations"]}
p.pop("status", None)
print(json.dumps(p))' | kc create -f - >/dev/null
	expect_pod shop again "$(stored shop jemalloc)"

	# The init container mode, in a namespace enforcing the restricted level:
	# the init container passes it whatever the pod's own settings.
	install_policy --set injection.mode=initContainer
	wait_policy '"initContainers" in p["spec"]'
	create "apiVersion: v1
kind: Pod
metadata: {name: copied, namespace: strict, annotations: {epollfix.io/inject: \"true\"}}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers: [{name: app, image: busybox, securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}]"
	expect_pod strict copied '{"annotations": '"$done_ann"', "volumes": [{"name": "epollfix", "emptyDir": {"sizeLimit": "8Mi"}}],
		"initContainers": [{"name": "epollfix-copy", "command": ["/bin/epollfix", "copy-files", "/epollfix-copy"],
			"volumeMounts": [{"name": "epollfix", "mountPath": "/epollfix-copy"}],
			"securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "allowPrivilegeEscalation": false,
				"readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
			"resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "32Mi"}}}],
		"containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "value": "'$lib'"}, '"$(ids app)"'], "volumeMounts": ['"$mount"'],
			"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}'
	# helm itself against the cluster, as a user installs: it asks the
	# cluster which APIs it serves, and says what it made.
	run "$K8S_TOOLS/bin/helm" install live "$CHART" --namespace epollfix --kubeconfig "$KUBECONFIG" \
		--set prometheusOperator.enabled=true
	assert_success
	assert_output --partial "Injection (admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, files by image)"
	assert_output --partial "the cluster serves no monitoring.coreos.com/v1"
	kc get mutatingadmissionpolicy live-epollfix >/dev/null || fail "helm made no policy"
	# The specs as stored, for the record.
	cp "$specs" "$K8S_TOOLS/stored-pods.txt" 2>/dev/null || true
}

# --- the pod of a process, as the agent sees it ---

# The mount point of cgroup v2 (on a hybrid host, /sys/fs/cgroup/unified),
# else of the v1 controller pids: where a test makes a pod's cgroups.
pod_hierarchy() {
	local v2
	v2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	if [ -n "$v2" ]; then echo "$v2"; else cgroup_v1 pids; fi
}

# The mount point of the v1 hierarchy of controller $1, "" without one.
cgroup_v1() {
	findmnt -n -t cgroup -o TARGET,OPTIONS | awk -v h="$1" '{n = split($2, o, ","); for (i = 1; i <= n; i++) if (o[i] == h) {print $1; exit}}'
}

# make_cgroup ROOT PATH: ROOT/PATH, each cgroup of it removed in teardown.
make_cgroup() {
	local at=$1 part
	mkdir -p "$1/$2" || fail "mkdir $1/$2"
	IFS=/ read -ra parts <<<"${2#/}"
	for part in "${parts[@]}"; do
		at=$at/$part
		echo "$at" >>"$cgroups_file"
	done
}

# kubelet_logs NS POD UID CONTAINER ID: the log directories kubelet makes
# for a pod's container, whose names are the ones status gives it (this
# test's own, for the commands it runs).
kubelet_logs() {
	export EPOLLFIX_KUBELET_POD_LOGS=$BATS_TEST_TMPDIR/kubelet-log/pods
	export EPOLLFIX_KUBELET_CONTAINER_LOGS=$BATS_TEST_TMPDIR/kubelet-log/containers
	mkdir -p "$EPOLLFIX_KUBELET_POD_LOGS/$1_$2_$3/$4" "$EPOLLFIX_KUBELET_CONTAINER_LOGS"
	ln -sfn "$EPOLLFIX_KUBELET_POD_LOGS/$1_$2_$3/$4/0.log" "$EPOLLFIX_KUBELET_CONTAINER_LOGS/$2_$1_$4-$5.log"
}

# start_in_cgroups OUT DIR... -- COMMAND...: COMMAND in the background, put
# in each cgroup DIR first (one a hierarchy) as a runtime puts a container's
# process; its pid in $started, once `epollfix status` reads it.
start_in_cgroups() {
	local out=$1 i
	shift
	bash -c 'while [ "$1" != -- ]; do echo $$ >"$1/cgroup.procs" || exit 1; shift; done; shift; exec "$@"' \
		_ "$@" >"$out" 2>&1 3>&- &
	started=$!
	track_pid "$started"
	for i in $(seq 50); do
		"$cmd" status "$started" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "no library seen in process $started: $(cat "$out")"
}

# A pod's uid (kubelet's form) and a container's id, new for each test.
new_pod() {
	uid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	id=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
}

# new_pod's uid and id, and in root the hierarchy to make its cgroups in
# (the caller's locals); skips, saying why, where none is writable.
new_pod_cgroups() {
	root=$(pod_hierarchy)
	[ -n "$root" ] && [ -w "$root" ] || skip "no writable cgroup hierarchy"
	new_pod
}

@test "status: a process in its own namespaces, in a cgroup named as kubelet names a pod's, shows its pod and kubelet's names in text, JSON and metrics" {
	[ "$(id -u)" = 0 ] || skip "namespaces and cgroups need root here"
	command -v unshare >/dev/null || skip "no unshare"
	local root uid id
	new_pod_cgroups
	# The systemd driver's shape, in cgroup v2: on a hybrid host (v1
	# controllers beside it) the v1 lines say "/" and the pod is on v2's.
	local slice=kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice
	local cg=$root/$slice/cri-containerd-$id.scope
	make_cgroup "$root" "$slice/cri-containerd-$id.scope"
	kubelet_logs shop web-7d9f-x2k4 "$uid" app "$id"
	# As the container runtime would: the cgroup first, then the namespaces,
	# with the variables the admission policy injects.
	bash -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$cg" \
		unshare --pid --fork --kill-child --mount-proc \
		env EPOLLFIX_POD_NAMESPACE=shop EPOLLFIX_POD_NAME=web-7d9f-x2k4 EPOLLFIX_CONTAINER_NAME=app \
		EPOLLFIX_POD_UID="$uid" LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000 \
		>"$BATS_TEST_TMPDIR/pod.out" 2>&1 3>&- &
	track_pid $!
	# The program is unshare's one child (bash became unshare): never another
	# test's program of the same name, which may run beside this one.
	for i in $(seq 50); do
		host=$(pgrep -P $! | head -1)
		[ -n "$host" ] && "$cmd" status "$host" >/dev/null 2>&1 && break
		sleep 0.1
	done
	[ -n "$host" ] || fail "the program did not start: $(cat "$BATS_TEST_TMPDIR/pod.out")"
	track_pid "$host"
	# No warning from the library about the variables.
	[ ! -s "$BATS_TEST_TMPDIR/pod.out" ] || fail "the program said: $(cat "$BATS_TEST_TMPDIR/pod.out")"

	run "$cmd" status "$host"
	assert_success
	assert_line "epollfix[$host] container: pid 1 in its namespace, cgroup /$slice/cri-containerd-$id.scope"
	assert_line "epollfix[$host] pod: namespace shop, pod web-7d9f-x2k4, container app, pod uid $uid, container id $id"
	run "$cmd" status
	assert_success
	assert_line --regexp "^ *$host ef-sleep .*  pod shop/web-7d9f-x2k4/app$"
	run "$cmd" status --json "$host"
	assert_success
	python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {"namespace": "shop", "pod": "web-7d9f-x2k4", "container": "app", "pod_uid": sys.argv[1], "container_id": sys.argv[2]}
assert d["kubernetes"] == want, d["kubernetes"]
assert d["ns_pid"] == 1, d["ns_pid"]' "$uid" "$id" <<<"$output"
	run "$cmd" status --metrics "$host"
	assert_success
	local labels="namespace=\"shop\",pod=\"web-7d9f-x2k4\",container=\"app\",pod_uid=\"$uid\",container_id=\"$id\""
	# Every sample of the process carries them.
	local samples
	samples=$(grep -c '^epollfix_' <<<"$output")
	[ "$samples" -gt 20 ] || fail "$samples samples"
	[ "$(grep -c "^epollfix_.*,$labels[,}]" <<<"$output")" = "$samples" ] ||
		fail "not every sample is labelled: $(grep -v "$labels" <<<"$output" | grep '^epollfix_' | head -3)"
	if command -v promtool >/dev/null; then
		promtool check metrics <<<"$output" || fail "promtool: $(promtool check metrics <<<"$output" 2>&1)"
	fi

	# An agent in its own cgroup namespace (a pod of its own) sees the path
	# from its cgroup: "/../../..", and the same pod.
	make_cgroup "$root" "epollfix-agent-$$/pod/container"
	pod_seen_from "$root/epollfix-agent-$$/pod/container" "/../../../kubepods.slice/"
	# An agent in a pod of the same QoS class (the DaemonSet's): the path
	# climbs only to that class's cgroup, and is the node's where the node's
	# hierarchy lists the process.
	local auid aid
	auid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	aid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	local own=kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${auid//-/_}.slice/cri-containerd-$aid.scope
	make_cgroup "$root" "$own"
	pod_seen_from "$root/$own" "/../../kubepods-burstable-pod"
}

# pod_seen_from DIR PREFIX: `epollfix status --json $host`, run in cgroup DIR
# with a cgroup namespace of its own, sees its cgroup path begin with PREFIX
# and the pod as the node names it (new_pod's uid and id, kubelet's names).
pod_seen_from() {
	run bash -c 'echo $$ >"$1/cgroup.procs"; exec unshare --cgroup "$2" status --json "$3"' _ "$1" "$cmd" "$host"
	assert_success
	python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["cgroup"].startswith(sys.argv[1]), d["cgroup"]
want = {"namespace": "shop", "pod": "web-7d9f-x2k4", "container": "app", "pod_uid": sys.argv[2], "container_id": sys.argv[3]}
assert d["kubernetes"] == want, d["kubernetes"]' "$2" "$uid" "$id" <<<"$output"
}

@test "status: without the variables, the pod's uid and container id from a v1 controller's cgroup path label the metrics" {
	[ "$(id -u)" = 0 ] || skip "cgroups need root here"
	root=$(cgroup_v1 pids)
	[ -n "$root" ] && [ -w "$root" ] || skip "no cgroup v1 pids hierarchy (a v1 or hybrid host)"
	local uid id
	new_pod
	# The cgroupfs driver's shape, with CRI-O's scope name, in the pids
	# controller alone: the other lines of /proc/PID/cgroup say "/".
	local path=kubepods/besteffort/pod$uid/crio-$id
	make_cgroup "$root" "$path"
	start_in_cgroups "$BATS_TEST_TMPDIR/out" "$root/$path" -- \
		env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	grep -q "^[0-9]*:pids:/$path\$" "/proc/$started/cgroup" || fail "$(cat "/proc/$started/cgroup")"
	run "$cmd" status --metrics "$started"
	assert_success
	assert_output --partial "cgroup=\"/$path\",pod_uid=\"$uid\",container_id=\"$id\"} "
	refute_output --partial 'namespace="'
	run "$cmd" status
	assert_line --regexp "^ *$started ef-sleep .*  pod pod$uid/${id:0:12}$"
}

@test "status: a path of any length the kernel allows, kind's systemd-driver shape under a node's scope" {
	[ "$(id -u)" = 0 ] || skip "cgroups need root here"
	local root uid id
	new_pod_cgroups
	local path=system.slice/docker-$id.scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice
	path+=/kubelet-kubepods-besteffort-pod${uid//-/_}.slice/cri-containerd-$id.scope
	[ "${#path}" -gt 293 ] || fail "${#path} bytes"
	# The node's kubelet's pod hierarchy, as the host sees it.
	export EPOLLFIX_KUBEPODS=/system.slice/docker-$id.scope/kubelet.slice/kubelet-kubepods.slice
	make_cgroup "$root" "$path"
	# In the hierarchy of the first line of /proc/PID/cgroup too, where a
	# reader of that line alone would look.
	local first dirs=("$root/$path")
	first=$(sed -n '1s/^[0-9]*:\([^:]*\):.*/\1/p' /proc/self/cgroup)
	first=$(if [ -z "$first" ]; then pod_hierarchy; else cgroup_v1 "$first"; fi)
	if [ -n "$first" ] && [ "$first" != "$root" ] && [ -w "$first" ]; then
		make_cgroup "$first" "$path"
		dirs+=("$first/$path")
	fi
	start_in_cgroups "$BATS_TEST_TMPDIR/out" "${dirs[@]}" -- \
		env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	run "$cmd" status "$started"
	assert_success
	assert_line --regexp "^epollfix\[$started\] container: pid [0-9]+ in its namespace, cgroup /$path$"
	assert_line "epollfix[$started] pod: namespace ?, pod ?, container ?, pod uid $uid, container id $id"
	run "$cmd" status --json "$started"
	assert_success
	python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["cgroup"] == "/" + sys.argv[3], d["cgroup"]
assert d["kubernetes"]["pod_uid"] == sys.argv[1] and d["kubernetes"]["container_id"] == sys.argv[2], d' "$uid" "$id" "$path" <<<"$output"
	run "$cmd" status --metrics "$started"
	assert_success
	assert_output --partial "cgroup=\"/$path\",pod_uid=\"$uid\",container_id=\"$id\"} "
}

@test "status: a pod's names are kubelet's: its environment names nothing, even beside its own pod's uid; a pod's cgroup name outside kubelet's hierarchy is no pod" {
	[ "$(id -u)" = 0 ] || skip "cgroups need root here"
	local root uid id other n=$RANDOM$RANDOM
	new_pod_cgroups
	other=$(python3 -c 'import uuid; print(uuid.uuid4())')
	local path=kubepods.slice/kubepods-pod${uid//-/_}.slice/cri-containerd-$id.scope
	make_cgroup "$root" "$path"
	kubelet_logs shop web-1 "$uid" app "$id"
	# The same names where any user may make them: a user's manager's
	# delegated subtree.
	local fake=epollfix-test-$n/user@1000.service/app.slice/kubepods-pod${other//-/_}.slice/cri-containerd-$id.scope
	make_cgroup "$root" "$fake"
	local claim="EPOLLFIX_POD_NAMESPACE=kube-system EPOLLFIX_POD_NAME=coredns-5d78c9869d-abcde EPOLLFIX_CONTAINER_NAME=coredns"
	# Its own pod's uid beside the names it claims; no uid; another pod's
	# uid in a cgroup named as that pod's, outside kubelet's; no pod at all.
	# shellcheck disable=SC2086
	start_in_cgroups "$BATS_TEST_TMPDIR/a" "$root/$path" -- \
		env $claim EPOLLFIX_POD_UID="$uid" LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local own=$started
	# shellcheck disable=SC2086
	start_in_cgroups "$BATS_TEST_TMPDIR/b" "$root/$path" -- \
		env $claim LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local none=$started
	# shellcheck disable=SC2086
	start_in_cgroups "$BATS_TEST_TMPDIR/c" "$root/$fake" -- \
		env $claim EPOLLFIX_POD_UID="$other" LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local fake_pod=$started
	# shellcheck disable=SC2086
	start_in_cgroups "$BATS_TEST_TMPDIR/d" -- \
		env $claim EPOLLFIX_POD_UID="$other" LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local outside=$started
	for p in $own $none; do
		run "$cmd" status --metrics "$p"
		assert_success
		refute_output --partial 'kube-system'
		refute_output --partial 'coredns'
		assert_output --partial "namespace=\"shop\",pod=\"web-1\",container=\"app\",pod_uid=\"$uid\",container_id=\"$id\"} "
		run "$cmd" status "$p"
		assert_line "epollfix[$p] pod: namespace shop, pod web-1, container app, pod uid $uid, container id $id"
	done
	for p in $fake_pod $outside; do
		run "$cmd" status --json "$p"
		assert_success
		python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); assert d["kubernetes"] is None, d["kubernetes"]' <<<"$output"
		run "$cmd" status --metrics "$p"
		refute_output --partial 'kube-system'
		refute_output --partial 'pod_uid='
	done
}

@test "status: a pod injected but running without the library says so, per process and per pod, in text, JSON and metrics" {
	[ "$(id -u)" = 0 ] || skip "cgroups need root here"
	local root uid id
	new_pod_cgroups
	local path=kubepods/burstable/pod$uid/$id
	make_cgroup "$root" "$path"
	local vars="EPOLLFIX_POD_NAMESPACE=shop EPOLLFIX_POD_NAME=web-1 EPOLLFIX_CONTAINER_NAME=app EPOLLFIX_POD_UID=$uid"
	kubelet_logs shop web-1 "$uid" app "$id"
	# As the chart's image volume did when it mounted the files one level
	# deeper than LD_PRELOAD says: no file there. The loader says so in one
	# line (glibc) or not at all (musl), and runs the program without it.
	local lib=$BATS_TEST_TMPDIR/epollfix/glibc/libepollfix.so
	# shellcheck disable=SC2086
	env $vars LD_PRELOAD="$lib" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000 >"$BATS_TEST_TMPDIR/missing" 2>&1 3>&- &
	local missing=$!
	track_pid "$missing"
	echo "$missing" >"$root/$path/cgroup.procs"
	# A file that is no library: there, but not loaded.
	mkdir -p "$BATS_TEST_TMPDIR/bad"
	echo "not an ELF file" >"$BATS_TEST_TMPDIR/bad/libepollfix.so"
	# shellcheck disable=SC2086
	env $vars LD_PRELOAD="/x/libjemalloc.so:$BATS_TEST_TMPDIR/bad/libepollfix.so" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000 \
		>"$BATS_TEST_TMPDIR/bad.out" 2>&1 3>&- &
	local bad=$!
	track_pid "$bad"
	echo "$bad" >"$root/$path/cgroup.procs"
	# The library beside a loaded one in the same pod.
	start_in_cgroups "$BATS_TEST_TMPDIR/loaded" "$root/$path" -- \
		env $vars LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local loaded=$started
	# env execs the program some time after: status read of env itself
	# finds no LD_PRELOAD (once, under load: an empty JSON answer).
	await_exec "$missing" "$EPOLLFIX_PROGS/ef-sleep" && await_exec "$bad" "$EPOLLFIX_PROGS/ef-sleep" ||
		fail "$(cat "$BATS_TEST_TMPDIR/missing" "$BATS_TEST_TMPDIR/bad.out")"

	run --separate-stderr "$cmd" status "$missing"
	assert_failure 5
	assert_equal "$stderr" "epollfix: status: libepollfix is not loaded in process $missing (ef-sleep), though its LD_PRELOAD names $lib: no such file, as the process sees its file system"
	assert_line "epollfix[$missing] library: NOT LOADED (missing): LD_PRELOAD names $lib: no such file, as the process sees its file system"
	assert_line "epollfix[$missing] pod: namespace shop, pod web-1, container app, pod uid $uid, container id $id"
	run --separate-stderr "$cmd" status --json "$bad"
	assert_failure 5
	python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["loaded"] is False and d["library_state"] == "not_loaded", d
assert d["library"] == sys.argv[1], d
assert d["kubernetes"] == {"namespace": "shop", "pod": "web-1", "container": "app", "pod_uid": sys.argv[2], "container_id": sys.argv[3]}, d' \
		"$BATS_TEST_TMPDIR/bad/libepollfix.so" "$uid" "$id" <<<"$output"

	# The table of every process: both, beside the one that has it.
	run "$cmd" status
	assert_success
	assert_line --regexp "^ *$missing ef-sleep +- +- +- +- +- +- +- +-  NOT LOADED: missing  pod shop/web-1/app$"
	assert_line --regexp "^ *$bad ef-sleep .*  NOT LOADED: not_loaded  pod shop/web-1/app$"
	assert_line --regexp "^ *$loaded ef-sleep .*  works  pod shop/web-1/app$"
	run --separate-stderr "$cmd" status --json
	assert_success
	python3 -c '
import json, sys
objs = {d["pid"]: d for d in map(json.loads, sys.stdin.read().splitlines())}
m, b, l = (objs[int(p)] for p in sys.argv[1:4])
assert (m["library_state"], b["library_state"], l["library_state"]) == ("missing", "not_loaded", "loaded"), objs
assert l["loaded"] is True and "upgraded" in l and "upgraded" not in m' "$missing" "$bad" "$loaded" <<<"$output"

	# The agent's metrics: every process of the pod, loaded or not, a
	# series for each state of the container's program.
	run --separate-stderr "$cmd" status --metrics
	assert_success
	local pod="program=\"ef-sleep\",namespace=\"shop\",pod=\"web-1\",container=\"app\",pod_uid=\"$uid\""
	assert_line "epollfix_library_loaded{$pod,state=\"missing\"} 0"
	assert_line "epollfix_library_loaded{$pod,state=\"not_loaded\"} 0"
	assert_line "epollfix_library_loaded{$pod,state=\"loaded\"} 1"
	assert_line "epollfix_processes{$pod,state=\"missing\"} 1"
	assert_line "epollfix_processes{$pod,state=\"not_loaded\"} 1"
	assert_line "epollfix_processes{$pod,state=\"loaded\"} 1"
	# Per process, the same with each one's pid.
	run --separate-stderr "$cmd" status --metrics --per-process
	assert_success
	local labels="namespace=\"shop\",pod=\"web-1\",container=\"app\",pod_uid=\"$uid\",container_id=\"$id\""
	assert_line "epollfix_library_loaded{pid=\"$missing\",program=\"ef-sleep\",ns_pid=\"$missing\",cgroup=\"/$path\",$labels,state=\"missing\"} 0"
	assert_line "epollfix_library_loaded{pid=\"$bad\",program=\"ef-sleep\",ns_pid=\"$bad\",cgroup=\"/$path\",$labels,state=\"not_loaded\"} 0"
	assert_line "epollfix_library_loaded{pid=\"$loaded\",program=\"ef-sleep\",ns_pid=\"$loaded\",cgroup=\"/$path\",$labels,state=\"loaded\"} 1"
	assert_line "epollfix_processes{pid=\"$missing\",program=\"ef-sleep\",ns_pid=\"$missing\",cgroup=\"/$path\",$labels,state=\"missing\"} 1"
	# No other family counts what a process without the library did.
	run grep -c "pid=\"$missing\"" <<<"$output"
	assert_output 2
	if command -v promtool >/dev/null; then
		"$cmd" status --metrics | promtool check metrics || fail "promtool"
		"$cmd" status --metrics --per-process | promtool check metrics || fail "promtool"
	fi
	run "$cmd" status --metrics "$missing"
	assert_success
	assert_output --partial "state=\"missing\"} 0"

	# A static program in the pod: no loader ran at all.
	printf '#include <unistd.h>\nint main(void) { sleep(120); return 0; }\n' >"$BATS_TEST_TMPDIR/s.c"
	cc -static -o "$BATS_TEST_TMPDIR/static-sleep" "$BATS_TEST_TMPDIR/s.c" 2>/dev/null ||
		skip "this toolchain cannot link statically (libc6-dev's libc.a)"
	# shellcheck disable=SC2086
	env $vars LD_PRELOAD="$EPOLLFIX_LIB" "$BATS_TEST_TMPDIR/static-sleep" 3>&- &
	local static=$!
	track_pid "$static"
	echo "$static" >"$root/$path/cgroup.procs"
	for i in $(seq 50); do
		grep -q '^LD_PRELOAD=' <(tr '\0' '\n' <"/proc/$static/environ") && break
		sleep 0.1
	done
	run "$cmd" status --metrics "$static"
	assert_success
	assert_output --partial "program=\"static-sleep\",ns_pid=\"$static\",cgroup=\"/$path\",$labels,state=\"static\"} 0"
}

@test "status: by default a container's processes are one series set, named by its pod and container, their counters summed; a second container's apart" {
	[ "$(id -u)" = 0 ] || skip "cgroups need root here"
	local root uid id other
	new_pod_cgroups
	other=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	make_cgroup "$root" "kubepods/pod$uid/$id"
	make_cgroup "$root" "kubepods/pod$uid/$other"
	local vars="EPOLLFIX_POD_NAMESPACE=shop EPOLLFIX_POD_NAME=web-1 EPOLLFIX_POD_UID=$uid"
	kubelet_logs shop web-1 "$uid" app "$id"
	kubelet_logs shop web-1 "$uid" sidecar "$other"
	local p
	for p in a b; do
		# shellcheck disable=SC2086
		start_in_cgroups "$BATS_TEST_TMPDIR/$p" "$root/kubepods/pod$uid/$id" -- \
			env $vars EPOLLFIX_CONTAINER_NAME=app LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	done
	# shellcheck disable=SC2086
	start_in_cgroups "$BATS_TEST_TMPDIR/c" "$root/kubepods/pod$uid/$other" -- \
		env $vars EPOLLFIX_CONTAINER_NAME=sidecar LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	run --separate-stderr "$cmd" status --metrics
	assert_success
	local mine app="program=\"ef-sleep\",namespace=\"shop\",pod=\"web-1\",container=\"app\",pod_uid=\"$uid\""
	mine=$(grep "pod_uid=\"$uid\"" <<<"$output")
	# Nothing that changes when a process or its container restarts.
	! grep -q '[{,]\(pid\|ns_pid\|cgroup\|container_id\)="' <<<"$mine" || fail "$(head -3 <<<"$mine")"
	grep -qx "epollfix_processes{$app,state=\"loaded\"} 2" <<<"$mine" || fail "$mine"
	grep -qx "epollfix_threads_total{$app} 2" <<<"$mine" || fail "$mine"
	grep -qx "epollfix_threads_total{${app/\"app\"/\"sidecar\"}} 1" <<<"$mine" || fail "$mine"
	assert_equal "$(grep -c "^epollfix_calls_total{$app,function=\"epoll_wait\"} [1-9]" <<<"$mine")" 1
	# The two containers' sets, the same families.
	assert_equal "$(grep -c "container=\"app\"" <<<"$mine")" "$(grep -c "container=\"sidecar\"" <<<"$mine")"
	if command -v promtool >/dev/null; then
		promtool check metrics <<<"$output" || fail "promtool: $(promtool check metrics <<<"$output" 2>&1)"
	fi
}

@test "status: the agent's two capabilities are the ones it needs: SYS_PTRACE to read another user's process, DAC_READ_SEARCH for its environment" {
	[ "$(id -u)" = 0 ] || skip "dropping capabilities from root needs root"
	command -v setpriv >/dev/null || skip "no setpriv"
	local root uid id
	new_pod_cgroups
	local path=kubepods/pod$uid/$id
	make_cgroup "$root" "$path"
	kubelet_logs shop web-1 "$uid" app "$id"
	# A pod's process as the agent meets it: another user, in its pod's
	# cgroup, the variables set; and one whose library is not there.
	start_in_cgroups "$BATS_TEST_TMPDIR/out" "$root/$path" -- setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env EPOLLFIX_POD_NAMESPACE=shop EPOLLFIX_POD_NAME=web-1 EPOLLFIX_CONTAINER_NAME=app EPOLLFIX_POD_UID="$uid" \
		LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local loaded=$started
	setpriv --reuid=nobody --regid=nogroup --clear-groups env LD_PRELOAD=/nowhere/libepollfix.so \
		"$EPOLLFIX_PROGS/ef-sleep" --count 1000000 >/dev/null 2>&1 3>&- &
	local missing=$!
	track_pid "$missing"
	# Root with every capability dropped but those named, as the chart's
	# securityContext leaves the agent.
	as() { setpriv --bounding-set="-all$1" --inh-caps=-all "$cmd" status "${@:2}"; }
	run as "" --metrics "$loaded"
	assert_failure 4
	assert_output --partial "needs CAP_SYS_PTRACE"
	# The pod's names are kubelet's: no more is needed for them.
	run as ",+sys_ptrace" --metrics "$loaded"
	assert_success
	assert_output --partial 'namespace="shop",pod="web-1",container="app"'
	# The environment (mode 0400, its user's) tells a library named but not loaded.
	run as ",+sys_ptrace" "$missing"
	assert_failure 5
	refute_output --partial "LD_PRELOAD names"
	# And those two are enough to tell it missing as the process finds it.
	run as ",+sys_ptrace,+dac_read_search" "$missing"
	assert_failure 5
	assert_output --partial "NOT LOADED (missing): LD_PRELOAD names /nowhere/libepollfix.so"
}

@test "dashboards: every PromQL recipe of doc/kubernetes.md and of the Grafana dashboard parses (promtool)" {
	once
	command -v promtool >/dev/null || skip "no promtool (Debian's prometheus: scripts/install-deps)"
	# Each query as a recording rule: promtool check rules parses them all.
	python3 - "$EPOLLFIX_SRC" >"$BATS_TEST_TMPDIR/rules.yml" <<'PY'
import json, re, sys
src = sys.argv[1]
doc = open(f"{src}/doc/kubernetes.md").read()
queries = re.findall(r"```promql\n(.*?)```", doc, re.S)
exprs = [q.strip() for block in queries for q in block.strip().split("\n") if q.strip() and not q.startswith(" ")]
# A block of one multi-line expression stays whole.
exprs = [b.strip() for b in queries if "\n " in b.strip()] + [e for e in exprs if not any(e in b and "\n " in b.strip() for b in queries)]
dash = json.load(open(f"{src}/deploy/grafana/epollfix-pods.json"))
exprs += [t["expr"].replace("$namespace", ".*") for p in dash["panels"] for t in p["targets"]]
assert len(exprs) >= 8, exprs
print("groups:\n- name: recipes\n  rules:")
for i, e in enumerate(exprs):
    print(f"  - record: recipe_{i}\n    expr: {json.dumps(e)}")
PY
	run promtool check rules "$BATS_TEST_TMPDIR/rules.yml"
	assert_success
	assert_output --partial "SUCCESS"
	# The join to kube-state-metrics' names, on series shaped as both export
	# them: a process known by its container id gets its pod's names.
	join=$(python3 -c 'import re, sys; print(re.search(r"```promql\n(sum by \(namespace, pod, container\) \(.*?)```", open(sys.argv[1]).read(), re.S).group(1))' "$EPOLLFIX_SRC/doc/kubernetes.md")
	cat >"$BATS_TEST_TMPDIR/join.yml" <<YML
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'epollfix_upgraded_waits_total{program="app",pod_uid="u-1",container_id="abc"}'
        values: '0+120x10'
      - series: 'epollfix_upgraded_waits_total{program="app",namespace="shop",pod="named",container="c",pod_uid="u-3"}'
        values: '0+60x10'
      - series: 'kube_pod_container_info{namespace="shop",pod="web-1",container="app",container_id="containerd://abc",uid="u-1",image="x"}'
        values: '1x10'
      - series: 'kube_pod_container_info{namespace="shop",pod="other",container="app",container_id="cri-o://def",uid="u-2",image="x"}'
        values: '1x10'
    promql_expr_test:
      - expr: |
$(sed 's/^/          /' <<<"$join")
        eval_time: 10m
        exp_samples:
          - labels: '{namespace="shop",pod="web-1",container="app"}'
            value: 2
YML
	run promtool test rules "$BATS_TEST_TMPDIR/join.yml"
	assert_success
}

@test "agent: the DaemonSet's two containers, run here with the commands the chart renders, serve a pod's metrics through the real node_exporter" {
	both_builds
	tool helm
	validator
	command -v prometheus-node-exporter >/dev/null || skip "no prometheus-node-exporter (scripts/install-deps)"
	"$EPOLLFIX_SRC/scripts/package-image" "$BATS_TEST_TMPDIR/image" >/dev/null
	render "$BATS_TEST_TMPDIR/chart" --kube-version 1.37.0
	# Each container's command line, the pod's paths made this machine's.
	local dir=$BATS_TEST_TMPDIR/textfile port
	mkdir "$dir"
	port=$(free_port)
	"$K8S_TOOLS/venv/bin/python" - "$BATS_TEST_TMPDIR/chart/all.yaml" >"$BATS_TEST_TMPDIR/cmds" <<'PY'
import sys, yaml
ds = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet")
for c in ds["spec"]["template"]["spec"]["containers"]:
    print(c["name"], *(c.get("command", []) + c.get("args", [])))
PY
	local status_cmd exporter_args
	status_cmd=$(sed -n 's/^epollfix-status //p' "$BATS_TEST_TMPDIR/cmds")
	exporter_args=$(sed -n 's/^node-exporter //p' "$BATS_TEST_TMPDIR/cmds")
	[ -n "$status_cmd" ] && [ -n "$exporter_args" ] || fail "containers: $(cat "$BATS_TEST_TMPDIR/cmds")"
	status_cmd=${status_cmd//\/bin\/epollfix/$BATS_TEST_TMPDIR/image/bin/epollfix}
	status_cmd=${status_cmd//=\/textfile/=$dir}
	exporter_args=${exporter_args//=\/textfile/=$dir}
	exporter_args=${exporter_args//=:9100/=127.0.0.1:$port}
	# A process of a pod, as the policy leaves it: in its pod's cgroup, the
	# variables, the library.
	local root uid id
	new_pod_cgroups
	make_cgroup "$root" "kubepods/pod$uid/$id"
	kubelet_logs shop web-1 "$uid" app "$id"
	start_in_cgroups "$BATS_TEST_TMPDIR/app" "$root/kubepods/pod$uid/$id" -- \
		env EPOLLFIX_POD_NAMESPACE=shop EPOLLFIX_POD_NAME=web-1 EPOLLFIX_CONTAINER_NAME=app EPOLLFIX_POD_UID="$uid" \
		LD_PRELOAD="$BATS_TEST_TMPDIR/image/glibc/libepollfix.so" "$EPOLLFIX_PROGS/ef-sleep" --count 1000000
	local app=$started
	# shellcheck disable=SC2086
	$status_cmd >"$BATS_TEST_TMPDIR/status.log" 2>&1 3>&- &
	track_pid $!
	# shellcheck disable=SC2086
	prometheus-node-exporter $exporter_args >"$BATS_TEST_TMPDIR/exporter.log" 2>&1 3>&- &
	track_pid $!
	local scraped=
	for i in $(seq 100); do
		# Until the program has upgraded a wait: its first scrape may come
		# before that, on a loaded machine.
		scraped=$(curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null) &&
			grep -q "^epollfix_upgraded_waits_total{.*pod_uid=\"$uid\".*} [1-9]" <<<"$scraped" && break
		sleep 0.2
	done
	grep -q '^node_textfile_scrape_error 0$' <<<"$scraped" ||
		fail "node_exporter: $(grep textfile <<<"$scraped"; tail -5 "$BATS_TEST_TMPDIR/exporter.log" "$BATS_TEST_TMPDIR/status.log")"
	# By its container, as the chart's default has it: no label that names
	# the process (node_exporter sorts the labels).
	grep -q "^epollfix_upgraded_waits_total{container=\"app\",namespace=\"shop\",pod=\"web-1\",pod_uid=\"$uid\",program=\"ef-sleep\"} [1-9]" <<<"$scraped" ||
		fail "not served with its pod: $(grep "^epollfix_upgraded" <<<"$scraped")"
	! grep -q '^epollfix_.*[{,]\(pid\|ns_pid\|cgroup\)=' <<<"$scraped" ||
		fail "a process's labels: $(grep -m3 'pid=' <<<"$scraped")"
	# Only the textfile collector: the node's own metrics are the cluster's node_exporter's.
	! grep -q '^node_cpu_seconds_total' <<<"$scraped" || fail "the node's own collectors run"
	# agent.perProcess: the same command, a series set for each process.
	render "$BATS_TEST_TMPDIR/per" --kube-version 1.37.0 --set agent.perProcess=true
	"$K8S_TOOLS/venv/bin/python" - "$BATS_TEST_TMPDIR/chart/all.yaml" "$BATS_TEST_TMPDIR/per/all.yaml" <<'PY'
import sys, yaml
def status(path):
    ds = next(d for d in yaml.safe_load_all(open(path)) if d and d["kind"] == "DaemonSet")
    return next(c["command"] for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "epollfix-status")
default, per = status(sys.argv[1]), status(sys.argv[2])
assert "--per-process" not in default and per == default + ["--per-process"], (default, per)
PY
}

@test "helm: agent.go.enabled adds the Go agent to the DaemonSet: \`epollfix agent --pods --mechanism=auto\`, privileged, its state shared with status; off by default" {
	once
	tool helm
	validator
	render "$BATS_TEST_TMPDIR/off" --kube-version 1.37.0
	render "$BATS_TEST_TMPDIR/on" --kube-version 1.37.0 --set agent.go.enabled=true
	for f in "$BATS_TEST_TMPDIR"/on/[0-9]*.yaml; do
		run "$K8S_TOOLS/venv/bin/kubernetes-validate" --strict -k 1.37.0 "$f"
		[ "$status" = 0 ] && [[ "$output" == *" passed for resource "* ]] || fail "$f: $output"
	done
	run "$K8S_TOOLS/bin/helm" lint "$CHART" --strict --kube-version 1.37.0 --set agent.go.enabled=true
	assert_success
	"$K8S_TOOLS/venv/bin/python" - "$BATS_TEST_TMPDIR/off/all.yaml" "$BATS_TEST_TMPDIR/on/all.yaml" <<'PY'
import sys, yaml
def spec(path):
    ds = next(d for d in yaml.safe_load_all(open(path)) if d and d["kind"] == "DaemonSet")
    return ds["spec"]["template"]["spec"]
off, on = spec(sys.argv[1]), spec(sys.argv[2])
names = lambda s: [c["name"] for c in s["containers"]]
assert "epollfix-go-agent" not in names(off), names(off)
assert not any(v["name"] == "agent-state" for v in off["volumes"]), off["volumes"]
assert any(v["name"] == "agent-state" and "emptyDir" in v for v in on["volumes"]), on["volumes"]
agent = next(c for c in on["containers"] if c["name"] == "epollfix-go-agent")
# The mechanism is auto unless the values name one (agent.go.mechanism).
assert agent["command"] == ["/bin/epollfix-agent", "agent", "--pods", "--mechanism=auto"], agent["command"]
assert agent["securityContext"]["privileged"] is True and on["hostPID"] is True, agent
assert {"name": "agent-state", "mountPath": "/run/epollfix"} in agent["volumeMounts"], agent
status = next(c for c in on["containers"] if c["name"] == "epollfix-status")
assert {"name": "agent-state", "mountPath": "/run/epollfix", "readOnly": True} in status["volumeMounts"], status
# Nothing else changes: the other containers are the same as with it off.
strip = lambda c: {k: v for k, v in c.items() if k != "volumeMounts"}
assert [strip(c) for c in off["containers"]] == [strip(c) for c in on["containers"] if c["name"] != "epollfix-go-agent"]
PY
}

@test "agent: the DaemonSet's Go agent, run here as the chart renders it, serves an opted-in pod's Go program, and the status container's file shows it (mechanism agent)" {
	both_builds
	tool helm
	[ "$(id -u)" = 0 ] || skip_missing "the agent needs root"
	local img=$BATS_TEST_TMPDIR/image
	"$EPOLLFIX_SRC/scripts/package-image" "$img" >/dev/null
	[ -x "$img/bin/epollfix-agent" ] || skip_missing "the glibc build has no agent (-Dbpf)"
	"$img/bin/epollfix-agent" agent --check >/dev/null 2>&1 ||
		skip_missing "the agent does not apply here: $("$img/bin/epollfix-agent" agent --check 2>&1 | tail -1)"
	local sleeps
	sleeps=$(prog local static sleeps)
	render "$BATS_TEST_TMPDIR/chart" --kube-version 1.37.0 --set agent.go.enabled=true
	"$K8S_TOOLS/venv/bin/python" - "$BATS_TEST_TMPDIR/chart/all.yaml" >"$BATS_TEST_TMPDIR/cmds" <<'PY'
import sys, yaml
ds = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet")
for c in ds["spec"]["template"]["spec"]["containers"]:
    print(c["name"], *(c.get("command", []) + c.get("args", [])))
PY
	local agent_cmd status_cmd dir=$BATS_TEST_TMPDIR/textfile
	mkdir "$dir"
	agent_cmd=$(sed -n 's/^epollfix-go-agent //p' "$BATS_TEST_TMPDIR/cmds")
	status_cmd=$(sed -n 's/^epollfix-status //p' "$BATS_TEST_TMPDIR/cmds")
	[ -n "$agent_cmd" ] && [ -n "$status_cmd" ] || fail "containers: $(cat "$BATS_TEST_TMPDIR/cmds")"
	# The image's paths made this machine's; /run/epollfix, the volume the
	# two containers share, is this machine's own.
	agent_cmd=${agent_cmd//\/bin\/epollfix-agent/$img/bin/epollfix-agent}
	status_cmd=${status_cmd//\/bin\/epollfix/$img/bin/epollfix}
	status_cmd=${status_cmd//=\/textfile/=$dir}
	status_cmd=${status_cmd//--watch=15s/--watch=0.5s}
	# A Go program of a pod that opted in, as the policy leaves it (static:
	# the library it was given does not load); another pod's, not opted in.
	local root uid id name=goapp$RANDOM
	root=$(pod_hierarchy)
	[ -n "$root" ] && [ -w "$root" ] || skip "no writable cgroup hierarchy"
	cp "$sleeps" "$BATS_TEST_TMPDIR/$name"
	new_pod
	make_cgroup "$root" "kubepods/pod$uid/$id"
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$root/kubepods/pod$uid/$id" \
		env EPOLLFIX_POD_NAMESPACE=shop EPOLLFIX_POD_NAME=go-1 EPOLLFIX_CONTAINER_NAME=app EPOLLFIX_POD_UID="$uid" \
		LD_PRELOAD="$img/glibc/libepollfix.so" "$BATS_TEST_TMPDIR/$name" 100us 1000000 >/dev/null 2>&1 3>&- &
	local app=$! other_uid=$uid
	track_pid "$app"
	kubelet_logs shop go-1 "$uid" app "$id"
	new_pod
	make_cgroup "$root" "kubepods/pod$uid/$id"
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$root/kubepods/pod$uid/$id" \
		"$BATS_TEST_TMPDIR/$name" 100us 1000000 >/dev/null 2>&1 3>&- &
	local other=$!
	track_pid "$other"
	# shellcheck disable=SC2086
	$agent_cmd 2>"$BATS_TEST_TMPDIR/agent.log" 3>&- &
	local agent=$!
	track_pid "$agent"
	# shellcheck disable=SC2086
	$status_cmd >"$BATS_TEST_TMPDIR/status.log" 2>&1 3>&- &
	track_pid $!
	local line= i
	for i in $(seq 100); do
		line=$(grep "^epollfix_go_ended_waits_total{.*pod_uid=\"$other_uid\".*mechanism=\"agent\"} [1-9]" "$dir/epollfix.prom" 2>/dev/null) && break
		sleep 0.2
	done
	[ -n "$line" ] || fail "not in the file: $(grep '^epollfix_go_ended' "$dir/epollfix.prom"; cat "$BATS_TEST_TMPDIR/agent.log" "$BATS_TEST_TMPDIR/status.log")"
	# By its pod and container, as the library's series: no pid.
	[[ "$line" == "epollfix_go_ended_waits_total{program=\"$name\",namespace=\"shop\",pod=\"go-1\",container=\"app\",pod_uid=\"$other_uid\",mechanism=\"agent\"} "* ]] ||
		fail "$line"
	# The pod that did not opt in: not served.
	run grep -c "program=\"$name\".*pod_uid=\"$uid\"" "$dir/epollfix.prom"
	assert_output 0
	run "$cmd" status "$other"
	refute_output --partial "served by the agent"
	kill -INT "$agent"
	wait "$agent"
}
