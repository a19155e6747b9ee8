#!/usr/bin/env bats
# Who called: event loops are recognised by their own object's symbols however
# late it was loaded, from their very first 1 ms wait, and the objects named
# in EPOLLFIX_GENUINE_CALLERS and EPOLLFIX_SUBMS_CALLERS get what the user said.
#
# ef-late-open dlopen()s a library once main() runs and calls one of its
# functions, which makes COUNT epoll_wait(..., 1) calls itself on an idle epoll
# fd (tests/progs/late_loop.c): libef-late-uv.so defines uv_run, as uvloop's
# and gevent's libuv extensions do; libef-late-plain.so does not.

setup() {
	load helpers
	COUNT=20
}

# late uv|plain FUNCTION [VAR=value...]: runs the waits with one debug line per
# decision and sets $meant and $upgraded to the number of each.
late() {
	local lib=$1 fn=$2
	shift 2
	run preload EPOLLFIX_LOG=debug "$@" "$EPOLLFIX_PROGS/ef-late-open" \
		"$EPOLLFIX_PROGS/libef-late-$lib.so" "$fn" "$COUNT"
	assert_success
	count_decisions
}

count_decisions() {
	meant=$(grep -c 'timeout=1ms) passed through (1ms meant) = 0' <<<"$output" || true)
	upgraded=$(grep -cE 'timeout=1ms\) upgraded to [0-9.]+[num]?s = 0' <<<"$output" || true)
}

# Every one of the $COUNT waits, the first included, was left alone.
assert_all_meant() {
	[ "$meant" = "$COUNT" ] || fail "$meant of $COUNT waits left alone as meant: $output"
	assert_rounded
}

assert_all_upgraded() {
	[ "$upgraded" = "$COUNT" ] || fail "$upgraded of $COUNT waits upgraded: $output"
}

@test "a loop dlopen'ed after start-up that defines uv_run keeps its 1 ms from the first wait" {
	late uv late_wait
	assert_all_meant
}

# Every wait's line says it went to epoll_pwait2 and returned. How long each
# took is not checked: it follows the deadline the policy learns from where a
# busy machine cut the runs, anywhere up to the 1 ms asked.
@test "the same waits from a late object without uv_run are upgraded" {
	late plain late_wait
	assert_all_upgraded
}

@test "a late loop is named in the report" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-late-open" \
		"$EPOLLFIX_PROGS/libef-late-uv.so" late_wait "$COUNT"
	assert_success
	grep -q "1ms left alone as meant: $COUNT (recognised: libuv;" <<<"$stderr" || fail "$stderr"
	grep -q "site: libef-late-uv.so (late_wait+[0-9]*): a runtime whose 1 ms is genuine; $COUNT waits left alone (EPOLLFIX_SUBMS_CALLERS naming its object would upgrade them)" <<<"$stderr" ||
		fail "$stderr"
}

# glibc's dladdr takes the loader lock that dlopen holds while constructors
# run: a first wait from a new call site would wait for the constructor (5 s
# here), or for ever if the constructor waited for that thread.
@test "a first wait from a new call site does not wait for another thread's dlopen" {
	run preload "$EPOLLFIX_PROGS/ef-late-open" --during "$EPOLLFIX_PROGS/libef-late-ctor.so"
	assert_success
	local us
	us=$(field first_wait_us)
	[ -n "$us" ] && [ "$us" -lt 1000000 ] || fail "the first wait took ${us}us: $output"
}

@test "JNI: a function named Java_* keeps its 1 ms, whatever its object" {
	late plain Java_ef_Late_wait
	assert_all_meant
}

@test "EPOLLFIX_GENUINE_CALLERS: a named object's 1 ms is left alone" {
	late plain late_wait EPOLLFIX_GENUINE_CALLERS=libef-late-plain.so
	assert_all_meant
	# By a directory name, among other items, or by its path.
	late plain late_wait EPOLLFIX_GENUINE_CALLERS="libzmq.so, progs"
	assert_all_meant
	late plain late_wait EPOLLFIX_GENUINE_CALLERS="$EPOLLFIX_PROGS/libef-late-plain.so"
	assert_all_meant
	# Other objects are not affected.
	late plain late_wait EPOLLFIX_GENUINE_CALLERS=libef-late-uv.so,libzmq.so
	assert_all_upgraded
}

@test "EPOLLFIX_SUBMS_CALLERS: a named loop's 1 ms is upgraded even when recognised" {
	late uv late_wait EPOLLFIX_SUBMS_CALLERS=libef-late-uv.so
	assert_all_upgraded
	late plain Java_ef_Late_wait EPOLLFIX_SUBMS_CALLERS=libef-late-plain.so
	assert_all_upgraded
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_SUBMS_CALLERS=libef-late-uv.so \
		"$EPOLLFIX_PROGS/ef-late-open" "$EPOLLFIX_PROGS/libef-late-uv.so" late_wait "$COUNT"
	assert_success
	grep -q "(recognised: listed in EPOLLFIX_SUBMS_CALLERS;" <<<"$stderr" || fail "$stderr"
	grep -q "site: libef-late-uv.so (late_wait+[0-9]*): listed in EPOLLFIX_SUBMS_CALLERS; $COUNT waits upgraded in SUBMS steps" <<<"$stderr" ||
		fail "$stderr"
}

# EPOLLFIX_ADAPT=safe leaves alone a 1 ms stream it cannot show to be sub-ms;
# the list is how a whole host keeps one known loop precise.
@test "EPOLLFIX_SUBMS_CALLERS with EPOLLFIX_ADAPT=safe: a listed ticker keeps every upgrade" {
	# First, that the list is what keeps the upgrades: unlisted, safe leaves
	# the ticker alone. It takes about 30 waits on a quiet machine; where
	# the thread is often preempted between two waits, a preemption ends a
	# run at a random point, which looks like a deadline passing (proof of
	# sub-ms), and it can take longer than a run: up to four runs are given.
	COUNT=300
	local try
	for try in 1 2 3 4; do
		run preload EPOLLFIX_LOG=debug EPOLLFIX_ADAPT=safe "$EPOLLFIX_PROGS/ef-sleep" --fixed-ms 1 --count "$COUNT"
		assert_success
		count_decisions
		[ "$meant" -gt 0 ] && break
	done
	[ "$meant" -gt 0 ] || fail "safe left no wait alone in $try runs of $COUNT: $output"
	run preload EPOLLFIX_LOG=debug EPOLLFIX_ADAPT=safe EPOLLFIX_SUBMS_CALLERS=ef-sleep \
		"$EPOLLFIX_PROGS/ef-sleep" --fixed-ms 1 --count "$COUNT"
	assert_success
	count_decisions
	assert_all_upgraded
}

@test "an object named in both lists is genuine" {
	late plain late_wait EPOLLFIX_SUBMS_CALLERS=progs EPOLLFIX_GENUINE_CALLERS=libef-late-plain.so
	assert_all_meant
}

@test "the program is named by its executable or by the name it was started by" {
	ln -s "$EPOLLFIX_PROGS/ef-sleep" "$BATS_TEST_TMPDIR/my-ticker"
	for name in ef-sleep my-ticker; do
		run preload EPOLLFIX_LOG=debug EPOLLFIX_GENUINE_CALLERS="$name" \
			"$BATS_TEST_TMPDIR/my-ticker" --fixed-ms 1 --count "$COUNT"
		assert_success
		count_decisions
		assert_all_meant
	done
	run preload EPOLLFIX_LOG=debug EPOLLFIX_GENUINE_CALLERS=ef-late-open \
		"$BATS_TEST_TMPDIR/my-ticker" --fixed-ms 1 --count "$COUNT"
	assert_success
	count_decisions
	assert_all_upgraded
}

# uvloop and gevent's libuv loop: Python extensions with libuv built in, which
# export uv_run and are imported long after the library's constructor. Their
# 1 ms waits, the first included, are all left alone. They run on BUILD/venv's
# python (scripts/install-deps, tests/matrix/requirements.txt), glibc only.
python_libuv_loop() {
	need_glibc
	local py=$EPOLLFIX_BUILD/venv/bin/python
	[ -x "$py" ] || skip "no $py (scripts/install-deps)"
	run preload EPOLLFIX_LOG=debug "$@" "$py" "$EPOLLFIX_SRC/tests/matrix/py_loop.py" \
		"$LOOP" sleep 1e-3 "$COUNT"
	assert_success
	count_decisions
	[ "$upgraded" = 0 ] || fail "$upgraded 1 ms waits upgraded: $output"
	[ "$meant" -gt 0 ] || fail "no 1 ms wait: $output"
	grep -m1 'timeout=1ms)' <<<"$output" | grep -q 'passed through (1ms meant)' ||
		fail "the first 1 ms wait was not left alone: $output"
}

@test "uvloop, imported after start-up: every 1 ms wait left alone, the first included" {
	LOOP=uvloop python_libuv_loop
}

@test "gevent's libuv loop, imported after start-up: every 1 ms wait left alone, the first included" {
	LOOP=gevent python_libuv_loop GEVENT_LOOP=libuv
}
