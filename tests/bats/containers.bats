#!/usr/bin/env bats
# epollfix where users run it: in containers, run for real by podman (runc),
# without a cluster. The project's image is built from deploy/image/Dockerfile
# as doc/kubernetes.md says, a Debian 12 image from the package mirror
# (mmdebstrap), both cached under the build directory by
# tests/containers/images (made once: a few minutes cold, seconds after).
# The programs come from the build trees, mounted read-only.
#
# The library is judged by its own report and the programs' shortest waits
# (tests/bats/helpers.bash), under the seccomp profiles containers run with:
# podman's default (containers-common), Docker's and containerd's defaults
# (made by their own Go modules: tests/containers/seccomp-profiles), and
# podman's with epoll_pwait2 killing the process or failing with ENOSYS; and
# in both ways the Helm chart puts it into a pod: the image mounted as an
# `image` volume, or its files copied into an emptyDir by an init container.

setup_file() {
	load helpers
	export CHART=$EPOLLFIX_SRC/deploy/helm/epollfix
	# The images hold both builds: made and run once, in the run for build/.
	[ "$(realpath "$EPOLLFIX_BUILD")" = "$(realpath "$EPOLLFIX_SRC/build")" ] || return 0
	if "$EPOLLFIX_SRC/tests/containers/images" "$EPOLLFIX_BUILD" >"$BATS_FILE_TMPDIR/images.log" 2>&1; then
		touch "$BATS_FILE_TMPDIR/images-ok"
	fi
	sed 's/^/# /' "$BATS_FILE_TMPDIR/images.log" >&3
	# The Go programs, as go.bats builds them (cached; never downloads here).
	GOPROXY=off "$EPOLLFIX_SRC/tests/progs/go/build" "$EPOLLFIX_BUILD" >/dev/null 2>&1 || true
}

setup() {
	load helpers
	if [ "$(realpath "$EPOLLFIX_BUILD")" != "$(realpath "$EPOLLFIX_SRC/build")" ]; then
		skip "tested in the run for build/ only (this is ${EPOLLFIX_BUILD##*/}): the images hold both builds"
	fi
	[ -f "$BATS_FILE_TMPDIR/images-ok" ] ||
		skip_missing "no test images: $(tail -1 "$BATS_FILE_TMPDIR/images.log")"
	pm=$EPOLLFIX_BUILD/containers/podman
	profiles=$EPOLLFIX_BUILD/containers/profiles
	image=localhost/epollfix-test/epollfix:current
	debian=localhost/epollfix-test/debian:12
	# Where the chart mounts the image's files, and the paths its LD_PRELOAD
	# names under it (values.yaml, the policy's template).
	mount=$(sed -n 's/^  mountPath: //p' "$CHART/values.yaml")
	[ "$mount" = /epollfix ] || fail "the chart's mountPath: $mount"
	for libc in glibc musl; do
		grep -qF "printf \"%s/$libc/libepollfix.so\" \$mount" "$CHART/templates/mutatingadmissionpolicy.yaml" ||
			fail "the policy's LD_PRELOAD does not name \$mount/$libc/libepollfix.so"
	done
	out=$BATS_TEST_TMPDIR/out
	mkdir -p "$out"
	chmod 777 "$out"
}

# ctr [podman run options...] -- COMMAND...: COMMAND in a Debian container,
# as podman runs one by default (its own seccomp profile) unless the options
# say otherwise, with the source and build trees mounted read-only and $out
# writable, at their own paths.
ctr() {
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	"$pm" run --rm -v "$EPOLLFIX_SRC:$EPOLLFIX_SRC:ro" -v "$out:$out" "${opts[@]}" "$debian" "$@"
}

# The image mounted as a Kubernetes `image` volume mounts it: its root at the
# chart's mountPath, read-only.
image_volume() { echo "--mount=type=image,src=$image,dst=$mount"; }

# The Python package installed where pip would put it in the image, when the
# build made it for the image's CPython (3.11, Debian 12's): site_opt.
python_site() {
	compgen -G "$EPOLLFIX_SRC/build/python/site/epollfix/_epollfix.cpython-311-*.so" >/dev/null ||
		skip "no Python package for CPython 3.11 in build/python/site"
	site_opt=-v=$EPOLLFIX_SRC/build/python/site:/usr/local/lib/python3.11/dist-packages:ro
}

# take NAME: run-progs' run NAME as $output and $status, its reports where
# report_count reads them.
take() {
	output=$(cat "$out/$1.out")
	status=$(cat "$out/$1.rc")
	rm -f "$BATS_TEST_TMPDIR"/ef-report.*
	local f
	for f in "$out/$1".report.*; do
		[ -f "$f" ] && cp "$f" "$BATS_TEST_TMPDIR/ef-report.${f##*.}"
	done
	return 0
}

# ran NAME: the program exited 0 having done all its work (its own summary:
# every sleep, every byte of the pipe read).
ran() {
	local want
	case $1 in
	c | musl) want='median_us=' ;;
	events) want='written=300 read=300 ' ;;
	asyncio*) want='count=100 ' ;;
	esac
	[ "$status" = 0 ] || fail "$1: exit $status: $output"
	[[ "$output" == *"$want"* ]] || fail "$1: not $want: $output"
}

# reports: the library's reports of the run, all of them.
reports() { cat "$BATS_TEST_TMPDIR"/ef-report.* 2>/dev/null; }

# passed_through WHY: no wait upgraded, and the report says why.
passed_through() {
	local up
	up=$(report_count upgraded)
	[ "${up:-missing}" = 0 ] || fail "upgraded: ${up:-no report}: $(reports)"
	reports | grep -q "epoll_pwait2: unavailable ($1" || fail "not the reason expected ($1): $(reports)"
}

# judge SETTING PROFILE-KIND: the runs of run-progs for one setting.
#   upgrades: every program's waits upgraded (asyncio-integrated: hinted)
#   passes WHY: every program ran, none upgraded, the report saying WHY
judge() {
	local setting=$1 kind=$2 why=${3:-} name
	for name in c musl events asyncio asyncio-integrated; do
		[ -f "$out/$setting-$name.rc" ] || continue
		take "$setting-$name"
		ran "$name"
		case $name:$kind in
		events:upgrades) [ "$(report_count upgraded)" -gt 0 ] || fail "$name: nothing upgraded: $(reports)" ;;
		asyncio-integrated:upgrades)
			[ "$(report_count hinted)" -gt 0 ] || fail "$name: no hint taken: $(reports)"
			assert_upgraded
			;;
		*:upgrades) assert_upgraded ;;
		*:passes) passed_through "$why" ;;
		esac
	done
}

# profile_run PROFILE SETTING...: run-progs under PROFILE (default: podman's
# own, as podman runs a container), the image mounted as the chart mounts it.
profile_run() {
	local profile=$1 opts=()
	shift
	python_site
	[ "$profile" = default ] || opts+=("--security-opt=seccomp=$profiles/$profile.json")
	ctr "$(image_volume)" "$site_opt" "${opts[@]}" -- \
		sh "$EPOLLFIX_SRC/tests/containers/run-progs" "$EPOLLFIX_SRC" "$out" "$mount" "$@"
}

@test "image: built by podman from deploy/image/Dockerfile as doc/kubernetes.md says; its root is the files, its entrypoint the command" {
	# The doc's lines, which tests/containers/images ran with podman (whose
	# build is docker build's command line) into the test store.
	block=$(readme_block doc/kubernetes.md sh "Build the")
	grep -qE '^scripts/package-image( |$)' <<<"$block" || fail "no scripts/package-image in: $block"
	grep -qE '^docker build -f deploy/image/Dockerfile -t [^ ]+ build-pkg/image$' <<<"$block" ||
		fail "no docker build of deploy/image/Dockerfile in: $block"
	run "$pm" run --rm "$image" --version
	assert_success
	assert_output --regexp '^epollfix [0-9]'
	# What a pod sees where the image is mounted: the three files, and the
	# Go agent's static command when the glibc build has the BPF side, no more.
	local agent=
	[ ! -f "$EPOLLFIX_SRC/build/src/epollfix-agent-static" ] || agent="$mount/bin/epollfix-agent "
	run ctr "$(image_volume)" -- find "$mount" -mindepth 1
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" \
		"$mount/bin $mount/bin/epollfix $agent$mount/glibc $mount/glibc/libepollfix.so $mount/musl $mount/musl/libepollfix.so "
}

# The image for mixed node pools: one name, a manifest list of an amd64 and
# an arm64 image, each node pulling its own. The arm64 files come from the
# aarch64 cross builds; the build runs nothing, so no emulation is needed.
@test "image, two architectures: package-image --manifest builds linux/amd64 and linux/arm64 under one manifest list, each image's files its architecture's" {
	local f
	for f in build-arm64/src/libepollfix.so build-arm64-musl/src/libepollfix.so build-arm64-musl/src/epollfix-static; do
		[ -f "$EPOLLFIX_SRC/$f" ] || skip_missing "no $f (scripts/build-arm64, which scripts/build runs)"
	done
	local name=localhost/epollfix-test/epollfix:multi arch mnt want agent
	run env PODMAN="$pm" "$EPOLLFIX_SRC/scripts/package-image" --manifest "$name" "$BATS_TEST_TMPDIR/image"
	assert_success
	run "$pm" manifest inspect "$name"
	assert_success
	local list=$output
	run python3 -c 'import json, sys
for m in json.load(sys.stdin)["manifests"]:
    print(m["platform"]["os"] + "/" + m["platform"]["architecture"], m["digest"])' <<<"$list"
	assert_success
	assert_equal "$(cut -d' ' -f1 <<<"$output" | sort | tr '\n' ' ')" "linux/amd64 linux/arm64 "
	local digests=$output
	for arch in amd64 arm64; do
		# The list's entry is this image.
		run "$pm" image inspect --format '{{.Os}}/{{.Architecture}} {{.Digest}}' "$name-$arch"
		assert_success
		assert_equal "$output" "$(grep "^linux/$arch " <<<"$digests")"
		# Its files, of its architecture (the Go agent in each, when that
		# architecture's glibc build has it).
		mnt=$("$pm" image mount "$name-$arch")
		agent=
		[ ! -f "$EPOLLFIX_SRC/build$([ "$arch" = amd64 ] || echo -arm64)/src/epollfix-agent-static" ] ||
			agent="./bin/epollfix-agent "
		run bash -c "cd '$mnt' && find . -type f | sort | tr '\n' ' '"
		assert_output "./bin/epollfix $agent./glibc/libepollfix.so ./musl/libepollfix.so "
		want=$([ "$arch" = amd64 ] && echo x86-64 || echo 'ARM aarch64')
		run bash -c "cd '$mnt' && file bin/* glibc/libepollfix.so musl/libepollfix.so"
		"$pm" image unmount "$name-$arch" >/dev/null
		[ "$(grep -c "ELF 64-bit LSB [a-z ]*, $want," <<<"$output")" = "$(wc -l <<<"$output")" ] || fail "$arch: $output"
	done
	# The chart's pods name the image by the list's one name (repository:tag),
	# never an architecture's own image.
	grep -qF '{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}' \
		"$CHART/templates/_helpers.tpl" || fail "the chart's image reference is not repository:tag"
	run bash -c "cat '$CHART/templates/daemonset.yaml' '$CHART/templates/mutatingadmissionpolicy.yaml' |
		grep -v '^ *#' | grep -E '(image|reference):'"
	assert_success
	refute_output --regexp 'amd64|arm64'
}

@test "chart, image volume: LD_PRELOAD as the policy sets it loads the library into a glibc and a musl program" {
	# The container's variable, as the policy gives it (the program is the
	# container's command): its report and the maps of a process of it say
	# the library is in. (podman's image mount shows the image's own paths in
	# the maps: /glibc/libepollfix.so.)
	run ctr "$(image_volume)" -e LD_PRELOAD="$mount/glibc/libepollfix.so" -e EPOLLFIX_STATS=1 -- \
		sh -c "grep -c '/glibc/libepollfix.so\$' /proc/self/maps; exec $EPOLLFIX_PROGS/ef-sleep --count 20"
	assert_success
	refute_output --partial "cannot be preloaded"
	assert_line --regexp '^[1-9][0-9]*$'
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9][0-9]+ '
	# Under the runtime's default profile, with nothing set but LD_PRELOAD.
	assert_output --regexp 'epollfix\[[0-9]+\] upgraded: [1-9]'
	run ctr "$(image_volume)" -e LD_PRELOAD="$mount/musl/libepollfix.so" -e EPOLLFIX_STATS=1 -- \
		"$EPOLLFIX_SRC/build-musl/tests/progs/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9][0-9]+ '
}

@test "chart, init container: the image's copy-files, run as the chart's init container, fills the emptyDir the containers load the library from" {
	# The init container's command and mount, as the chart renders them.
	local copier cmd dest
	copier=$(grep -o 'name: "epollfix-copy".*' "$CHART/templates/_helpers.tpl")
	cmd=$(sed -n 's/.*command: \["\([^]]*\)"\].*/\1/p' <<<"$copier" | sed 's/", "/ /g')
	dest=$(sed -n 's/.*volumeMounts: \[[^]]*mountPath: "\([^"]*\)".*/\1/p' <<<"$copier")
	[ "$cmd" = "/bin/epollfix copy-files $dest" ] || fail "the init container's command: $cmd ($dest)"
	# An emptyDir as kubelet makes one (mode 0777), filled by the image run as
	# the init container's securityContext has it.
	local dir=$BATS_TEST_TMPDIR/emptydir
	mkdir -m 777 "$dir"
	# shellcheck disable=SC2086
	run "$pm" run --rm --user 65532:65532 --read-only --cap-drop=all \
		--security-opt=no-new-privileges -v "$dir:$dest" --entrypoint "${cmd%% *}" "$image" ${cmd#* }
	assert_success
	[ "$(cd "$dir" && find . -type f | sort | tr '\n' ' ')" = "./bin/epollfix ./glibc/libepollfix.so ./musl/libepollfix.so " ] ||
		fail "copied: $(cd "$dir" && find . | sort)"
	# The pod's containers mount it where the image volume would be.
	run ctr -v "$dir:$mount:ro" -e LD_PRELOAD="$mount/glibc/libepollfix.so" -e EPOLLFIX_STATS=1 -- \
		"$EPOLLFIX_PROGS/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9][0-9]+ '
	run ctr -v "$dir:$mount:ro" -e LD_PRELOAD="$mount/musl/libepollfix.so" -e EPOLLFIX_STATS=1 -- \
		"$EPOLLFIX_SRC/build-musl/tests/progs/ef-sleep" --count 20
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9][0-9]+ '
}

@test "without the policy: doc/kubernetes.md's COPY --from and ENV lines put the library in an image where LD_PRELOAD finds it" {
	local copy env dir=$BATS_TEST_TMPDIR/derived tag=localhost/epollfix-test/derived:$$
	copy=$(grep -o 'COPY --from=[^`]*' "$EPOLLFIX_SRC/doc/kubernetes.md")
	env=$(grep -o 'ENV LD_PRELOAD=[^`]*' "$EPOLLFIX_SRC/doc/kubernetes.md")
	[ -n "$copy" ] && [ -n "$env" ] || fail "no COPY --from or ENV line in doc/kubernetes.md"
	mkdir "$dir"
	# The doc's registry is this test's image.
	printf 'FROM %s\n%s\n%s\n' "$debian" "$(sed "s|--from=[^ ]*|--from=$image|" <<<"$copy")" "$env" >"$dir/Containerfile"
	run "$pm" build -q -t "$tag" "$dir"
	assert_success
	run "$pm" run --rm -v "$EPOLLFIX_SRC:$EPOLLFIX_SRC:ro" -e EPOLLFIX_STATS=1 "$tag" "$EPOLLFIX_PROGS/ef-sleep" --count 20
	"$pm" rmi -f "$tag" >/dev/null 2>&1 || true
	assert_success
	assert_output --regexp 'epollfix\[[0-9]+\] calls: [1-9][0-9]+ '
}

@test "the image's command as a container's wrapper: a glibc program and a musl program get their libc's library, a static Go program is supervised" {
	local go=$EPOLLFIX_BUILD/go/local/static/sleeps
	[ -x "$go" ] || skip_missing "no $go (tests/progs/go/build: offline, or no go)"
	local wrap=$mount/bin/epollfix
	run ctr "$(image_volume)" -- sh -c "
		$wrap --stats=1 --seccomp=trust $EPOLLFIX_PROGS/ef-sleep --count 50 2>&1 &&
		$wrap --stats=1 --seccomp=trust $EPOLLFIX_SRC/build-musl/tests/progs/ef-sleep --count 50 2>&1 &&
		$wrap --check $EPOLLFIX_PROGS/ef-sleep | grep '^library:' &&
		$wrap --check $EPOLLFIX_SRC/build-musl/tests/progs/ef-sleep | grep '^library:' &&
		$wrap --check $go | grep '^library:' &&
		$wrap --stats=$out/go-report $go 50us 200 >/dev/null &&
		for _ in \$(seq 50); do grep -q 'Go supervisor' $out/go-report 2>/dev/null && break; sleep 0.1; done"
	assert_success
	refute_output --partial "cannot find"
	assert_line "library:      $mount/glibc/libepollfix.so"
	assert_line "library:      $mount/musl/libepollfix.so"
	assert_line "library:      none: a statically linked program loads none"
	[ "$(grep -c 'epollfix\[[0-9]*\] upgraded: [1-9][0-9]*$' <<<"$output")" = 2 ] || fail "not both upgraded: $output"
	# The supervisor writes its report once the program is gone, so the
	# container waits for it: when its first process ends, every other one
	# is killed, the supervisor too.
	run cat "$out/go-report"
	assert_output --regexp 'Go supervisor of pid [0-9]+: [0-9]+ notifications, [0-9]+ timers set'
	# Supervised: its sub-ms waits were given timers. How many of the 200
	# sleeps reach the netpoller before their deadline passes is the load's
	# to say (152 here once beside other jobs), so only that there were some.
	local timers
	timers=$(sed -n 's/.* \([0-9]*\) timers set.*/\1/p' <<<"$output")
	[ "${timers:-0}" -ge 1 ] || fail "no timer set for 200 sleeps: $output"
}

@test "Go under Docker's and containerd's default profiles: pidfd_getfd refused, so not supervised, one line says why, the program runs unharmed" {
	local go=$EPOLLFIX_BUILD/go/local/static/sleeps profile
	[ -x "$go" ] || skip_missing "no $go (tests/progs/go/build: offline, or no go)"
	for profile in docker containerd; do
		run --separate-stderr ctr "$(image_volume)" "--security-opt=seccomp=$profiles/$profile.json" -- \
			"$mount/bin/epollfix" --stats="$out/go-report" "$go" 50us 50
		assert_success
		[ "$(wc -l <<<"$output")" = 50 ] || fail "$profile: $output"
		[[ "$stderr" == *"the seccomp filter in force refuses pidfd_getfd"* ]] || fail "$profile: $stderr"
		[ ! -f "$out/go-report" ] || fail "$profile: a supervisor ran: $(cat "$out/go-report")"
	done
	# Docker's allows it with CAP_SYS_PTRACE: then supervised.
	run --separate-stderr ctr "$(image_volume)" "--security-opt=seccomp=$profiles/docker.json" --cap-add=SYS_PTRACE -- \
		"$mount/bin/epollfix" "$go" 50us 50
	assert_success
	# Without CAP_SYS_ADMIN the filter needs no_new_privs: one line says
	# what that costs, nothing else.
	[ -z "$stderr" ] || [[ "$stderr" == "epollfix: Go supervision sets no_new_privs"* && "$stderr" != *$'\n'* ]] ||
		fail "$stderr"
}

# The profiles as given are the ones in force: each answers pidfd_getfd(-1)
# as its rules say (podman's allows it: EBADF; Docker's and containerd's
# refuse it without CAP_SYS_PTRACE: EPERM).
profile_in_force() {
	run ctr "$@" -- python3 -c 'import ctypes, os; ctypes.CDLL(None, use_errno=True).syscall(438, -1, 0, 0); print(os.strerror(ctypes.get_errno()))'
	assert_success
}

@test "podman's default profile: with nothing set but LD_PRELOAD every program's waits are upgraded; so with EPOLLFIX_SECCOMP=trust, none with safe" {
	profile_in_force
	assert_output "Bad file descriptor"
	profile_run default unset trust safe
	judge unset upgrades
	judge trust upgrades
	judge safe passes "a seccomp filter of unknown content"
}

@test "Docker's default profile: with nothing set but LD_PRELOAD every program's waits are upgraded; so with EPOLLFIX_SECCOMP=trust, none with safe" {
	profile_in_force "--security-opt=seccomp=$profiles/docker.json"
	assert_output "Operation not permitted"
	profile_run docker unset trust safe
	judge unset upgrades
	judge trust upgrades
	judge safe passes "a seccomp filter of unknown content"
}

@test "containerd's default profile: with nothing set but LD_PRELOAD every program's waits are upgraded; so with EPOLLFIX_SECCOMP=trust, none with safe" {
	profile_in_force "--security-opt=seccomp=$profiles/containerd.json"
	assert_output "Operation not permitted"
	profile_run containerd unset trust safe
	judge unset upgrades
	judge trust upgrades
	judge safe passes "a seccomp filter of unknown content"
}

@test "a profile that kills on epoll_pwait2: every program exits 0 with its events, nothing upgraded, the report says why" {
	profile_run kill-pwait2 unset safe
	judge unset passes ""
	judge safe passes "a seccomp filter of unknown content"
}

@test "a profile that refuses epoll_pwait2 with ENOSYS: every program exits 0 with its events, nothing upgraded, the report says why" {
	profile_run enosys-pwait2 unset safe trust
	judge unset passes ""
	judge safe passes "a seccomp filter of unknown content"
	judge trust passes "ENOSYS"
}
