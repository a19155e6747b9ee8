#!/usr/bin/env bats
# The policy's targets on real event loops (tests/matrix), with the default settings:
# - genuine-ms loops (libuv/Node.js, tokio, Java NIO, libevent, nginx): at most
#   1.25x the waits per fire of the run without the library, and no
#   Selector.select(1) returning 0 keys under 900 us;
# - sub-ms loops (CPython asyncio and select.epoll, libev, mio): the precision
#   kept, the library upgrading their 50 us waits (its report, and the
#   earliest fire under 900 us).
# Waits are counted by libcountwaits.so in both runs, after the library in
# LD_PRELOAD (the library must see the program's own call sites): each kernel
# wait with a non-zero timeout once, the epoll_pwait2 of an upgraded wait too.
# Needs the glibc meson build (libcountwaits.so, ef-m-*) and tests/matrix/build
# (tokio, mio, Java); what is missing is skipped.
#
# EPOLLFIX_ADAPT=auto (the default) recognises or learns the genuine-ms loops.
#
# The third-party Python loops (trio, Tornado, gevent, uvloop) run on
# BUILD/venv's python (scripts/install-deps, tests/matrix/requirements.txt);
# without it they are skipped. Their wake-ups are the vcsw= their program
# reads with getrusage around its timers, not a counting preload.

setup() {
	load helpers
	need_glibc
	MX_BUILD=$EPOLLFIX_TESTS_BUILD/matrix
	MX_SRC=$EPOLLFIX_SRC/tests/matrix
	CW=$MX_BUILD/libcountwaits.so
	[ -e "$CW" ] || skip "no $CW (glibc meson build)"
	WAITS=$BATS_TEST_TMPDIR/waits
	RUST=$MX_BUILD/cargo-target/release
	COUNT=200
	VENV_PY=$EPOLLFIX_BUILD/venv/bin/python
}

need_venv() {
	[ -x "$VENV_PY" ] || skip "no $VENV_PY (scripts/install-deps)"
}

# without [VAR=value...] CMD...: runs CMD with only the counting preload.
without() {
	rm -f "$WAITS"
	run env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$CW" COUNTWAITS_OUT="$WAITS" "$@"
	assert_success
	per_fire
}

# with [VAR=value...] CMD...: runs CMD preloaded with the counter, then the library.
with() {
	rm -f "$WAITS"
	EPOLLFIX_LIB="$EPOLLFIX_LIB:$CW" run preload COUNTWAITS_OUT="$WAITS" "$@"
	assert_success
	per_fire
}

# Sets $per_fire: 100 x the waits with a non-zero timeout per fire, from the
# countwaits lines (one per process) and the fires= field of $output.
per_fire() {
	local fires timed
	fires=$(field fires)
	[ -n "$fires" ] && [ "$fires" -gt 0 ] || fail "no fires in: $output"
	[ -s "$WAITS" ] || fail "no count written to $WAITS: $output"
	timed=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } }
		END { print v["waits"] - v["t0"] }' "$WAITS")
	per_fire=$((timed * 100 / fires))
}

# genuine [VAR=value...] CMD...: waits per fire with the library at most 1.25x those without.
genuine() {
	local base
	without "$@"
	base=$per_fire
	with "$@"
	[ $((per_fire * 4)) -le $((base * 5)) ] ||
		fail "waits per fire x100: $base without, $per_fire with (over 1.25x): $output"
}

# subms REQUESTED_US CMD...: with the library, the precision kept, judged by
# what load cannot break: the library says it upgraded (or took the hint of)
# a wait for at least half the timers, and the earliest timer fired before a
# 1 ms wait could have ended (lateness is elapsed minus the request; load
# lengthens waits, never shortens one). The medians themselves are
# tests/matrix/run's figures.
subms() {
	local req=$1 least up hinted fires
	shift
	with "$@"
	least=$(field lateness_min_us)
	fires=$(field fires)
	[ -n "$least" ] || fail "no lateness in: $output"
	[ $((least + req)) -lt "$ROUNDED_US" ] ||
		fail "the earliest fire took $((least + req))us, not under ${ROUNDED_US}us: $output"
	up=$(report_count upgraded)
	hinted=$(report_count hinted)
	[ $((${up:-0} + ${hinted:-0})) -ge $((fires / 2)) ] ||
		fail "the library upgraded ${up:-none} and took ${hinted:-no} hints for $fires timers: $output"
}

need() {
	[ -x "$1" ] || [ -e "$1" ] || skip "not built: $1 (${2:-meson})"
}

@test "matrix: Node.js setTimeout(cb, 1) chain: wake-ups at most 1.25x" {
	command -v node >/dev/null || skip "no node"
	genuine node "$MX_SRC/node_timer.js" 1 "$COUNT"
}

@test "matrix: libuv 1 ms timer: wake-ups at most 1.25x" {
	need "$MX_BUILD/ef-m-uv" libuv1-dev
	genuine "$MX_BUILD/ef-m-uv" --ms 1 --count "$COUNT"
}

# tokio's grid is learned from runs of 1 ms waits that no stall cut; beside
# the rest of the suite the learning took long enough to weigh on 200 timers
# (2.64 waits a fire against 2.00 once): 800 show the loop it learned.
@test "matrix: tokio sleep(1 ms): wake-ups at most 1.25x" {
	need "$RUST/ef-tokio" tests/matrix/build
	genuine "$RUST/ef-tokio" --us 1000 --count $((COUNT * 4))
}

@test "matrix: tokio sleep(500 us): wake-ups at most 1.25x" {
	need "$RUST/ef-tokio" tests/matrix/build
	genuine "$RUST/ef-tokio" --us 500 --count $((COUNT * 4))
}

@test "matrix: Java Selector.select(1): no early return, wake-ups at most 1.25x" {
	command -v java >/dev/null || skip "no java"
	need "$MX_BUILD/java/SelectLoop.class" tests/matrix/build
	genuine java -Xshare:auto -cp "$MX_BUILD/java" SelectLoop 1 "$COUNT"
	[ "$(field early)" = 0 ] || fail "select(1) returned 0 keys under 900 us: $output"
}

@test "matrix: libevent 1 ms evtimer: wake-ups at most 1.25x" {
	need "$MX_BUILD/ef-m-libevent" libevent-dev
	genuine "$MX_BUILD/ef-m-libevent" --us 1000 --count "$COUNT"
}

@test "matrix: libevent 500 us evtimer: wake-ups at most 1.25x" {
	need "$MX_BUILD/ef-m-libevent" libevent-dev
	genuine "$MX_BUILD/ef-m-libevent" --us 500 --count "$COUNT"
}

@test "matrix: libevent with EVENT_PRECISE_TIMER=1: wake-ups at most 1.25x" {
	need "$MX_BUILD/ef-m-libevent" libevent-dev
	genuine EVENT_PRECISE_TIMER=1 "$MX_BUILD/ef-m-libevent" --us 500 --count "$COUNT"
	assert_output --partial "precise=1"
}

@test "matrix: nginx 1 ms timer (echo_sleep): wake-ups at most 1.25x" {
	py=$(python_bin) || skip "no python3"
	[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || skip "no nginx"
	[ -e /usr/lib/nginx/modules/ngx_http_echo_module.so ] || skip "no libnginx-mod-http-echo"
	# The driver is a Python client: the preloads go to nginx alone, through
	# MX_CHILD_PRELOAD, not to the client (so not through preload).
	local base
	rm -f "$WAITS"
	run env MX_CHILD_PRELOAD="$CW" COUNTWAITS_OUT="$WAITS" "$py" "$MX_SRC/nginx_timer.py" 1 "$COUNT"
	assert_success
	per_fire
	base=$per_fire
	rm -f "$WAITS"
	run env MX_CHILD_PRELOAD="$EPOLLFIX_LIB:$CW" COUNTWAITS_OUT="$WAITS" \
		"$py" "$MX_SRC/nginx_timer.py" 1 "$COUNT"
	assert_success
	per_fire
	[ $((per_fire * 4)) -le $((base * 5)) ] ||
		fail "waits per fire x100: $base without, $per_fire with (over 1.25x): $output"
}

@test "matrix: CPython asyncio.sleep(50e-6): upgraded, under a millisecond" {
	py=$(python_bin) || skip "no python3"
	subms 50 "$py" "$MX_SRC/py_asyncio.py" 50e-6 "$COUNT"
}

@test "matrix: CPython select.epoll().poll(50e-6): upgraded, under a millisecond" {
	py=$(python_bin) || skip "no python3"
	subms 50 "$py" "$MX_SRC/py_epoll.py" 50e-6 "$COUNT"
}

@test "matrix: libev 50 us timer: upgraded, under a millisecond" {
	need "$MX_BUILD/ef-m-libev" libev-dev
	subms 50 "$MX_BUILD/ef-m-libev" --us 50 --count "$COUNT"
}

@test "matrix: mio Poll::poll(50 us): upgraded, under a millisecond" {
	need "$RUST/ef-mio" tests/matrix/build
	subms 50 "$RUST/ef-mio" --us 50 --count "$COUNT"
}

@test "matrix: with EPOLLFIX_ADAPT=off the genuine-ms loops wake far more (the policy is what keeps them)" {
	need "$MX_BUILD/ef-m-uv" libuv1-dev
	need "$RUST/ef-tokio" tests/matrix/build
	for prog in "$MX_BUILD/ef-m-uv --ms 1" "$RUST/ef-tokio --us 500"; do
		# shellcheck disable=SC2086
		without $prog --count "$COUNT"
		base=$per_fire
		# shellcheck disable=SC2086
		with EPOLLFIX_ADAPT=off $prog --count "$COUNT"
		[ $((per_fire)) -ge $((base * 3)) ] ||
			fail "$prog: waits per fire x100: $base without, $per_fire with adapt=off: $output"
	done
}

@test "matrix: the report says what was recognised and what was learned" {
	need "$MX_BUILD/ef-m-uv" libuv1-dev
	run --separate-stderr preload EPOLLFIX_STATS=1 "$MX_BUILD/ef-m-uv" --ms 1 --count 50
	assert_success
	grep -q "1ms left alone as meant: [1-9][0-9]* (recognised: libuv; learned: 0 genuine" <<<"$stderr" ||
		fail "$stderr"
	need "$RUST/ef-tokio" tests/matrix/build
	# The grid is learned from runs of 1 ms waits that a stall has not cut:
	# 400 timers give a loaded machine room for a few cut runs (100 were
	# once not enough beside the other build's suite).
	run --separate-stderr preload EPOLLFIX_STATS=1 "$RUST/ef-tokio" --us 500 --count 400
	assert_success
	grep -q "(recognised: none; learned: [1-9][0-9]* genuine" <<<"$stderr" || fail "$stderr"
}

@test "matrix: trio.sleep(50e-6): upgraded, under a millisecond" {
	need_venv
	subms 50 "$VENV_PY" "$MX_SRC/py_loop.py" trio sleep 50e-6 "$COUNT"
}

@test "matrix: Tornado gen.sleep(50e-6): upgraded, under a millisecond" {
	need_venv
	subms 50 "$VENV_PY" "$MX_SRC/py_loop.py" tornado sleep 50e-6 "$COUNT"
}

@test "matrix: gevent.sleep(50e-6) on its libev loop: upgraded, under a millisecond" {
	need_venv
	subms 50 "$VENV_PY" "$MX_SRC/py_loop.py" gevent sleep 50e-6 "$COUNT"
}

@test "matrix: a mio timer loop of 50 us: upgraded, under a millisecond" {
	need "$RUST/ef-mio" tests/matrix/build
	subms 50 "$RUST/ef-mio" --us 50 --loop 1 --count "$COUNT"
}

# libuv_left_alone [VAR=value...] LOOP: 200 genuine 1 ms sleeps wake the
# process (vcsw= of the timer phase) at most 250 times more with the library
# than without, 1.25 a timer: what the learner costs before it leaves the
# loop alone (about 15-110 on a loaded 2-core VM, before per-call-site
# recognition), while a loop upgraded throughout wakes about 10 times a timer.
libuv_left_alone() {
	local base csw
	run env ${EPOLLFIX_PRELOAD_EXTRA:+LD_PRELOAD=$EPOLLFIX_PRELOAD_EXTRA} "$@" 200
	assert_success
	base=$(field vcsw)
	run preload "$@" 200
	assert_success
	csw=$(field vcsw)
	[ -n "$base" ] && [ -n "$csw" ] || fail "no vcsw in: $output"
	[ "$csw" -le $((base + 250)) ] ||
		fail "wake-ups over 200 timers: $base without, $csw with (over +250): $output"
}

@test "matrix: uvloop 1 ms sleeps (libuv loaded after start-up): at most 250 extra wake-ups" {
	need_venv
	libuv_left_alone "$VENV_PY" "$MX_SRC/py_loop.py" uvloop sleep 1e-3
}

@test "matrix: gevent's libuv loop, 1 ms sleeps: at most 250 extra wake-ups" {
	need_venv
	libuv_left_alone GEVENT_LOOP=libuv "$VENV_PY" "$MX_SRC/py_loop.py" gevent sleep 1e-3
}

@test "matrix: tests/matrix/economy measures a case and judges it (50 us libev timer)" {
	need "$MX_BUILD/ef-m-libev" libev-dev
	py=$(python_bin) || skip "no python3"
	# the harness preloads the library alone: a sanitizer build needs its runtime first
	[ -z "${EPOLLFIX_PRELOAD_EXTRA:-}" ] || skip "the harness does not preload EPOLLFIX_PRELOAD_EXTRA"
	run "$py" "$MX_SRC/economy" --build "$EPOLLFIX_BUILD" \
		--lib "$EPOLLFIX_LIB" --quick --count 100 --only "50us,libev"
	assert_success
	# the verdict itself is the full run's to judge: a loaded VM may miss it
	assert_output --regexp '\| 50us \| libev \(C\) \| per timer \| [0-9]\.[0-9]+ → [0-9.]+ \| .* \| [0-9]{3,5} → [0-9]+; p99 [0-9]{3,5} → [0-9]+ \| p50 <= [0-9]+ us .* \| (met|MISSED) \|'
}
