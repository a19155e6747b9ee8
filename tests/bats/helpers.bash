# Shared by every .bats file. LD_PRELOAD is set only on the command under test,
# through `preload`; bats, bash and the helpers themselves never run preloaded.
bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

# The suite's locations come from one file meson writes into the build
# directory (bats_env in tests/meson.build). EPOLLFIX_BUILD names that
# directory: meson test and scripts/sanitize set it, a hand-run bats uses build/.
: "${EPOLLFIX_BUILD:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}"
bats_env_file=$EPOLLFIX_BUILD/tests/bats-env.bash
[ -f "$bats_env_file" ] || {
	echo "no $bats_env_file: run scripts/build (or meson setup) first" >&2
	return 1
}

# Nothing from the caller's environment may steer the library in a test: every
# EPOLLFIX_* variable goes but the sanitizer runtime scripts/sanitize preloads
# and EPOLLFIX_EMULATED (an emulated machine, tests/kernels/run), which only
# the tests read.
for v in $(env | sed -n 's/^\(EPOLLFIX_[A-Z_]*\)=.*/\1/p'); do
	[ "$v" = EPOLLFIX_PRELOAD_EXTRA ] || [ "$v" = EPOLLFIX_EMULATED ] || unset "$v"
done
# Nor may the machine's own system file (SYSCONFDIR/epollfix.conf): a test
# reads one only when it names it. (A setuid program ignores this variable and
# would still read that file.)
export EPOLLFIX_CONFIG=/nonexistent/epollfix.conf
# shellcheck source=/dev/null
source "$bats_env_file"
PROGS_SRC="$EPOLLFIX_SRC/tests/progs"
# How many times longer a test may wait for a line or an exit that must come:
# in an emulated guest (tests/kernels/run) beside the suite, work takes
# several times as long, and a bound there judges nothing but time (the Go
# supervisor's pair once took over 5 s to leave in the 6.1-rt guest).
PATIENCE=1
[ -z "${EPOLLFIX_EMULATED:-}" ] || PATIENCE=12

# preload [VAR=value...] command [args...]: the command alone gets the library.
# EPOLLFIX_PRELOAD_EXTRA (scripts/sanitize: the ASan runtime) goes first. The
# library's exit report goes to files of the test's own, one a process, unless
# the command names its own EPOLLFIX_STATS: assert_upgraded reads what the
# library says it did there.
preload() {
	rm -f "$BATS_TEST_TMPDIR"/ef-report.*
	preload_as_configured EPOLLFIX_STATS="$BATS_TEST_TMPDIR/ef-report.%p" "$@"
}

# preload_as_configured: the same, with no report but the one the test's own
# configuration asks (a system file's stats = line, which the environment
# would override).
preload_as_configured() {
	env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" "$@"
}

# report_count NAME: NAME's count summed over the library's reports of the
# last run: the files preload names, and any report in the output itself
# (EPOLLFIX_STATS=1). Empty when there is none.
report_count() {
	{
		cat "$BATS_TEST_TMPDIR"/ef-report.* 2>/dev/null
		printf '%s\n' "$output" "${stderr-}"
	} | awk -v key="] $1: " 'index($0, key) == 0 { next }
		{ split(substr($0, index($0, key) + length(key)), w, " "); n += w[1]; found = 1 }
		END { if (found) print n + 0 }'
}

# The interpreter itself, not a wrapper script (pyenv's shim is bash), so that
# the preload reaches python and only python.
python_bin() {
	command -v python3 >/dev/null || return 1
	python3 -c 'import sys; print(sys.executable)'
}

# readme_block FILE LANG MARKER: the first ```LANG block after the line of FILE
# (README.md, or a page under doc/) that holds MARKER, as a user would copy it.
readme_block() {
	awk -v lang="$2" -v m="$3" 'index($0, m) { found = 1 } found && $0 == "```" lang { on = 1; next }
		on && /^```/ { exit } on { print }' "$EPOLLFIX_SRC/$1"
}

# skip_missing WHY: a tool the install step provides is missing: skipped,
# saying why; in CI (CI=true), whose install step ran, a failure instead.
skip_missing() {
	[ -z "${CI:-}" ] || fail "missing in CI: $1"
	skip "$1"
}

# k8s_tools (in setup_file): K8S_TOOLS, the Kubernetes tools
# scripts/install-k8s-tools builds into build/k8s-tools (EPOLLFIX_K8S_TOOLS:
# a directory of tools of your own instead). Built here, the first time, by the
# run for build/: minutes then, or the wait for scripts/test's own build of
# them; nothing after. What it builds and any warning go to the TAP stream.
k8s_tools() {
	export K8S_TOOLS=${EPOLLFIX_K8S_TOOLS:-$EPOLLFIX_SRC/build/k8s-tools}
	if [ -z "${EPOLLFIX_K8S_TOOLS:-}" ] &&
		[ "$(realpath "$EPOLLFIX_BUILD")" = "$(realpath "$EPOLLFIX_SRC/build")" ]; then
		"$EPOLLFIX_SRC/scripts/install-k8s-tools" 2>&1 >/dev/null | sed 's/^/# /' >&3 || true
	fi
}

# The version meson.build's project() sets, the one place it is written.
project_version() {
	meson introspect --projectinfo "$EPOLLFIX_BUILD" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])'
}

need_glibc() {
	[ "$EPOLLFIX_LIBC" = glibc ] || skip "needs a glibc build ($EPOLLFIX_LIBC)"
}

# asan_runtime: the path of gcc's AddressSanitizer runtime, an interposer of
# prctl (among much else) that forwards to the next definition; fails when
# there is none. Preloaded into a program that is not instrumented, it must
# come first, and its leak check stays off (the program's leaks are not ours).
asan_runtime() {
	local f
	f=$(gcc -print-file-name=libasan.so 2>/dev/null) && [ -f "$f" ] && echo "$f"
}

# field NAME: the value of NAME=value in $output.
field() {
	sed -n "s/.*\\b$1=\\([0-9-]*\\).*/\\1/p" <<<"$output" | head -1
}

# hinted_between FIRST LAST: "N M" of the library's debug lines in $stderr
# from the line FIRST (empty: the start) to the line LAST (empty: the end): N hinted waits
# taken to their deadline (epoll_pwait2), M hinted polls, whose deadline
# passed before the wait was made (a thread preempted between its hint and
# its wait, a loaded machine's chance), which need no epoll_pwait2 and count
# as exact.
hinted_between() {
	local part start=1 end='$'
	[ -z "$1" ] || start="/^$1\$/"
	[ -z "$2" ] || end="/^$2\$/"
	part=$(sed -n "${start},${end}p" <<<"$stderr")
	echo "$(grep -c 'hinted: to the deadline' <<<"$part") $(grep -c 'hinted: the deadline passed, a poll' <<<"$part")"
}

# A 1 ms wait never ends before 1 ms, however loaded the machine: a program's
# shortest wait under ROUNDED_US was upgraded, and a median over it means most
# were not. A median under it says most waits ended before any 1 ms wait
# could: an upgraded wait takes about 60 us here, and two busy processes on
# both cores stretch it to no more than a few hundred (the margin). How far
# under 1 ms an upgraded wait ends is the load's as much as the library's:
# bench/ measures it, no test here judges it.
ROUNDED_US=900

# assert_upgraded: the program's waits were upgraded, judged by what
# preemption cannot break: the library's own report says it upgraded (or took
# the hint of) at least half as many waits as the program made (its count= or
# waits=), and the program's shortest wait ended before a 1 ms wait could
# have (a program that prints no min_us: its median, with the margin above).
# Where no report can be had (secure execution ignores EPOLLFIX_STATS), the
# program's figure alone.
assert_upgraded() {
	local min n up hinted
	min=$(field min_us)
	[ -n "$min" ] || min=$(field median_us)
	[ -n "$min" ] || fail "no min_us or median_us in: $output"
	[ "$min" -lt "$ROUNDED_US" ] ||
		fail "${min}us: not shorter than a 1 ms wait: $output"
	n=$(field count)
	[ -n "$n" ] || n=$(field waits)
	up=$(report_count upgraded)
	[ -n "$up" ] || return 0
	hinted=$(report_count hinted)
	# Taken: a later run that is not preloaded never reads them.
	rm -f "$BATS_TEST_TMPDIR"/ef-report.*
	[ $((up + ${hinted:-0})) -ge $(((${n:-1} + 1) / 2)) ] ||
		fail "the library upgraded $up and took ${hinted:-no} hints for ${n:-1} waits: $output"
}

assert_rounded() {
	local m
	rm -f "$BATS_TEST_TMPDIR"/ef-report.* # this run's reports are not the next one's
	m=$(field median_us)
	[ -n "$m" ] || fail "no median in: $output"
	[ "$m" -gt "$ROUNDED_US" ] || fail "median ${m}us is not over ${ROUNDED_US}us: $output"
}

# Background processes a test starts: track_pid PID records one; stop_tracked
# [SIGNAL] (in teardown) signals them all, the last started first (TERM
# unless told), then reaps them, even when the test failed.
track_pid() {
	echo "$1" >>"$BATS_TEST_TMPDIR/tracked-pids"
}
stop_tracked() {
	local f=$BATS_TEST_TMPDIR/tracked-pids p
	[ -f "$f" ] || return 0
	tac "$f" | while read -r p; do kill -"${1:-TERM}" "$p" 2>/dev/null || true; done
	while read -r p; do wait "$p" 2>/dev/null || true; done <"$f"
	rm -f "$f"
}

# await_exec PID PROGRAM: 0 once PID runs PROGRAM (a command started in the
# background, like env or epollfix's launcher, execs it some time after:
# under load, after the test's next step; 0.5 s was once not enough in an
# emulated guest), up to 30 s; 1 when it does not, or is gone.
await_exec() {
	local i
	for i in $(seq 300); do
		[ "$(readlink "/proc/$1/exe")" != "$2" ] || return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# short_sleeps TEXT [SLEEP_US]: "K of N sleeps under 0.9 ms": of the N
# sleeps of SLEEP_US (50 unless told) in TEXT (tests/progs/go/sleeps' lines,
# each sleep's lateness in ns), the K that took under 900 us in all, before
# a wait rounded up to 1 ms could end. Load only makes a served sleep
# later, and a sleep no one serves may end so when another of its runtime's
# wake-ups comes first: served (the agent, the supervisor), 43% or more
# beside 12 busy loops (agent.bats); not served, 0-8.5% of 200 beside a CI
# run here. A median (723 us late once, served, beside CI's guests) tells
# them apart less well than a quarter.
short_sleeps() {
	grep -E '^-?[0-9]+$' <<<"$1" | awk -v d="${2:-50}" '{ n++; if ($1 / 1000 + d < 900) k++ }
		END { print k + 0 " of " n + 0 " sleeps under 0.9 ms" }'
}
# served_sleeps TEXT [SLEEP_US] / native_sleeps TEXT [SLEEP_US]: some
# sleeps in TEXT, and a quarter or more of them short / under half
# (agent.bats' native judge).
served_sleeps() {
	local k n
	read -r k _ n _ < <(short_sleeps "$@")
	[ "$n" -gt 0 ] && [ $((k * 4)) -ge "$n" ]
}
native_sleeps() {
	local k n
	read -r k _ n _ < <(short_sleeps "$@")
	[ "$n" -gt 0 ] && [ $((k * 2)) -lt "$n" ]
}

# go_programs: builds the Go test programs (tests/progs/go/build) under
# $EPOLLFIX_BUILD/go, from the caches only (never downloads here); its lines
# go to bats' output. For a setup_file.
go_programs() {
	# An emulated guest (tests/kernels/run) runs the host's, already built.
	[ -z "${EPOLLFIX_EMULATED:-}" ] || return 0
	GOPROXY=off "$EPOLLFIX_SRC/tests/progs/go/build" "$EPOLLFIX_BUILD" 2>&1 | sed "s/^/# /" >&3 || true
}

# prog RELEASE VARIANT NAME: a Go test program tests/progs/go/build made
# under $EPOLLFIX_BUILD/go, or the test is skipped (failed in CI).
prog() {
	local p=$EPOLLFIX_BUILD/go/$1/$2/$3
	[ -x "$p" ] || skip_missing "no $1 $2 $3 (tests/progs/go/build: offline, or no go)"
	echo "$p"
}

# forge_go KIND ARG DIR: a copy of the static phases program in DIR, forged by
# tests/progs/forge_go.py (KIND ARG: a reading as costly as a user can make
# it, or another release), as $forged; it still runs.
forge_go() {
	mkdir -p "$3"
	forged=$3/forged-$1
	python3 "$PROGS_SRC/forge_go.py" "$1" "$(prog local static phases)" "$forged" "$2" ||
		fail "forge_go.py $1 failed"
}

# hinted_to LOG US: of the library's debug lines in LOG that say a hinted
# wait went to epoll_pwait2 for the time left to its deadline, "NEAR OVER
# ALL": NEAR of them for more than US-1000 us, OVER for more than US (a
# whole-ms wait of the rounded-up timeout would be), of ALL. The time from
# the hint to the call is a few us, but a preemption can take more of it on
# a loaded machine (7.07 ms left of a 10.3 ms hint beside the suite's guests,
# 7.93 ms under ASan), so only OVER must be none.
hinted_to() {
	awk -v us="$2" 'match($0, /hinted: to the deadline, [0-9.]+ms = 0$/) {
		split(substr($0, RSTART + 25), a, "ms"); v = a[1] * 1000; all++
		if (v > us) over++; else if (v > us - 1000) n++ } END { print n + 0, over + 0, all + 0 }' <<<"$1"
}
