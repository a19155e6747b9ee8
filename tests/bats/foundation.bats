#!/usr/bin/env bats
# The foundation: rounded-up 1 ms waits become sub-millisecond waits in real
# programs, everything else passes through, and nothing is lost or broken.

setup() {
	load helpers
}

@test "library exports only the interposed calls and the documented API" {
	run bash -c "nm -D --defined-only '$EPOLLFIX_LIB' | awk '\$2 ~ /[TW]/ {print \$3}' | grep -v '^_' | sort"
	assert_success
	# No call that makes a process or a thread: the library's slack is never
	# in force where the program could make one.
	assert_output "$(printf '%s\n' epoll_pwait epoll_wait epollfix_counters epollfix_epoll_wait_ns epollfix_hint_ns epollfix_set epollfix_version prctl syscall | sort)"
}

@test "library's thread-local block asks at most 16-byte alignment, which glibc gives a dlopen on aarch64 too" {
	# More (64 once) and aarch64's glibc refuses dlopen, epollfix.enable()'s
	# way in: "cannot allocate memory in static TLS block".
	run bash -c "readelf -lW '$EPOLLFIX_LIB' | awk '\$1 == \"TLS\" {print \$NF}'"
	assert_success
	[ -n "$output" ] || fail "no TLS segment in $EPOLLFIX_LIB"
	(( output <= 16 )) || fail "TLS segment aligned to $output"
}

@test "C event loop: 50us sleep takes over 900us without the library" {
	run "$EPOLLFIX_PROGS/ef-sleep" --count 100
	assert_success
	assert_rounded
}

@test "C event loop: 50us sleep is upgraded by the library (epoll_wait)" {
	run preload "$EPOLLFIX_PROGS/ef-sleep" --count 200
	assert_success
	assert_upgraded
}

@test "C event loop: 50us sleep is upgraded by the library (epoll_pwait)" {
	run preload "$EPOLLFIX_PROGS/ef-sleep" --api pwait --count 200
	assert_success
	assert_upgraded
}

# A CPython script sleeping 50us: over 900us alone, upgraded preloaded.
python_sleep_case() {
	need_glibc
	py=$(python_bin) || skip "no python3"
	run "$py" "$PROGS_SRC/$1" 50e-6 100
	assert_success
	assert_rounded
	run preload "$py" "$PROGS_SRC/$1" 50e-6 200
	assert_success
	assert_upgraded
}

@test "CPython asyncio.sleep(50e-6): over 900us without, upgraded with" {
	python_sleep_case asyncio_sleep.py
}

@test "CPython select.epoll().poll(50e-6): over 900us without, upgraded with" {
	python_sleep_case epoll_poll.py
}

@test "libev timer of 50us: over 900us without, upgraded with" {
	need_glibc
	[ -x "$EPOLLFIX_PROGS/ef-libev" ] || skip "built without libev"
	run "$EPOLLFIX_PROGS/ef-libev" --count 100
	assert_success
	assert_rounded
	run preload "$EPOLLFIX_PROGS/ef-libev" --count 200
	assert_success
	assert_upgraded
}

@test "only upgraded waits use epoll_pwait2 (strace)" {
	command -v strace >/dev/null || skip "no strace"
	# 30 sleeps of 50us: every wait has timeout 1 and is upgraded.
	run strace -f -qq -c -e trace=epoll_wait,epoll_pwait,epoll_pwait2 \
		env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 30
	assert_success
	pw2=$(awk '$NF == "epoll_pwait2" {print $4}' <<<"$output")
	[ "${pw2:-0}" -ge 30 ] || fail "expected >= 30 epoll_pwait2 calls: $output"
	# Timeouts of 2 ms (above MAX_MS) must pass through: no epoll_pwait2 at all,
	# apart from the one probe with maxevents 0.
	# (musl's epoll_wait is the epoll_pwait system call with a NULL mask.)
	run strace -f -qq -e trace=epoll_wait,epoll_pwait,epoll_pwait2 \
		env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --fixed-ms 2 --count 20
	assert_success
	assert_equal "$(grep -cE 'epoll_p?wait\([0-9]+, \[\], 8, 2(, NULL, 8)?\) *= 0' <<<"$output")" 20
	refute_output --regexp 'epoll_pwait2\([0-9]'
}

@test "zero and negative timeouts pass through untouched" {
	command -v strace >/dev/null || skip "no strace"
	run strace -f -qq -e trace=epoll_wait,epoll_pwait,epoll_pwait2 \
		env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-events" --count 300
	assert_success
	assert_line --partial "read=300"
	assert_output --regexp 'epoll_p?wait\([0-9]+, .*, 4, 0(, NULL, 8)?\) *= '
	refute_output --regexp 'epoll_pwait2\(.*0, \{tv_sec=0, tv_nsec=0\}'
}

@test "a 2ms timeout with MAX_MS=1 still waits the full 2ms" {
	run preload "$EPOLLFIX_PROGS/ef-sleep" --fixed-ms 2 --count 30
	assert_success
	[ "$(field median_us)" -gt 1900 ] || fail "$output"
}

@test "MAX_MS=3: a 2ms timeout waits about 1ms + SUBMS" {
	run preload EPOLLFIX_MAX_MS=3 "$EPOLLFIX_PROGS/ef-sleep" --fixed-ms 2 --count 30
	assert_success
	# Preemption only lengthens a wait: the shortest shows what was asked,
	# never under 1 ms + SUBMS, and under the 2 ms a wait left alone takes.
	m=$(field min_us)
	[ "$m" -gt 1000 ] && [ "$m" -lt 1900 ] || fail "$output"
}

@test "every event is delivered (level-triggered, epoll_wait and epoll_pwait)" {
	for api in wait pwait; do
		run preload "$EPOLLFIX_PROGS/ef-events" --api "$api" --count 2000
		assert_success
		assert_line "written=2000 read=2000 calls=$(field calls)"
	done
}

@test "every event is delivered (edge-triggered)" {
	run preload "$EPOLLFIX_PROGS/ef-events" --edge --count 2000
	assert_success
	assert_line --partial "written=2000 read=2000"
}

@test "epoll_pwait's signal mask is applied during an upgraded wait" {
	run "$EPOLLFIX_PROGS/ef-sigmask"
	assert_success
	run preload EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-sigmask"
	assert_success
	assert_line "ok"
	assert_output --regexp "epoll_pwait\\(epfd=[0-9]+, timeout=1ms\\) upgraded to 50us = -1"
}

@test "EPOLLFIX_DISABLE=1 and EPOLLFIX_SUBMS=off leave 1ms waits alone" {
	run preload EPOLLFIX_DISABLE=1 "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_success
	assert_rounded
	run preload EPOLLFIX_SUBMS=off "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_success
	assert_rounded
}

@test "EPOLLFIX_SUBMS changes the replacement wait" {
	# ADAPT=off: every upgraded wait is one SUBMS step (auto aims at the
	# deadlines it predicts, here sooner than 700 us).
	run preload EPOLLFIX_ADAPT=off EPOLLFIX_SUBMS=700us "$EPOLLFIX_PROGS/ef-sleep" --count 60 --sleep-us 50
	assert_success
	# The waits take the 700 us step, which no load shortens; the shortest
	# under 1 ms, before any 1 ms wait could end (load only lengthens waits).
	m=$(field min_us)
	[ "$m" -gt 650 ] && [ "$m" -lt 1000 ] || fail "$output"
}

@test "EPOLLFIX_SLACK: the program reads its own slack after upgraded waits" {
	need_glibc
	py=$(python_bin) || skip "no python3"
	# PR_GET_TIMERSLACK after upgraded waits must give back the default 50us.
	run preload "$py" -c '
import ctypes, select, os
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe(); ep = select.epoll(); ep.register(r, select.EPOLLIN)
for _ in range(20): ep.poll(50e-6)
print("slack=%d" % libc.prctl(30, 0, 0, 0, 0))'
	assert_success
	assert_output "slack=50000"
}

@test "EPOLLFIX_SLACK=keep and a custom slack both work" {
	run preload EPOLLFIX_SLACK=keep "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_success
	assert_upgraded
	run preload EPOLLFIX_SLACK=20us "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_success
	assert_upgraded
}

@test "bad values: one warning naming variable, value and fallback; program runs" {
	local cases=(
		"EPOLLFIX_SUBMS=abc|epollfix: EPOLLFIX_SUBMS='abc' is not a duration (like 50us); using 50us"
		"EPOLLFIX_SUBMS=5ms|epollfix: EPOLLFIX_SUBMS='5ms' is out of range (1ns to 1ms); using 50us"
		"EPOLLFIX_MAX_MS=-2|epollfix: EPOLLFIX_MAX_MS='-2' is negative (1 to 1000); using 1"
		"EPOLLFIX_MAX_MS=x|epollfix: EPOLLFIX_MAX_MS='x' is not a whole number; using 1"
		"EPOLLFIX_SLACK=0ns|epollfix: EPOLLFIX_SLACK='0ns' is out of range (1ns to 1s); using 1us"
		"EPOLLFIX_DISABLE=maybe|epollfix: EPOLLFIX_DISABLE='maybe' is not one of 0, 1; using 1"
		"EPOLLFIX_LOG=loud|epollfix: EPOLLFIX_LOG='loud' is not one of quiet, warn, debug; using warn"
		"EPOLLFIX_CLAMP=fast|epollfix: EPOLLFIX_CLAMP='fast' is not a duration (like 50us); using off"
		"EPOLLFIX_CLAMP_AFTER=0|epollfix: EPOLLFIX_CLAMP_AFTER='0' is out of range (1 to 1000000000); using 16"
	)
	for c in "${cases[@]}"; do
		run --separate-stderr preload "${c%%|*}" "$EPOLLFIX_PROGS/ef-sleep" --count 20
		assert_success
		[ "$stderr" = "${c#*|}" ] || fail "for ${c%%|*} got stderr: $stderr"
		[ -n "$(field median_us)" ] || fail "no result for ${c%%|*}: $output"
	done
}

@test "a bad value still leaves the rest of the policy working" {
	run --separate-stderr preload EPOLLFIX_SUBMS=abc "$EPOLLFIX_PROGS/ef-sleep" --count 100
	assert_success
	assert_upgraded
}

@test "seccomp EPERM or ENOSYS on epoll_pwait2 from the start: original 1ms waits, all events" {
	for how in eperm enosys; do
		run preload "$EPOLLFIX_PROGS/ef-filter" "$how" "$EPOLLFIX_PROGS/ef-sleep" --count 40
		assert_success
		assert_rounded
		run preload "$EPOLLFIX_PROGS/ef-filter" "$how" "$EPOLLFIX_PROGS/ef-events" --count 500
		assert_success
		assert_line --partial "written=500 read=500"
	done
}

@test "seccomp filter that kills on epoll_pwait2: the probe does not kill the program" {
	run preload "$EPOLLFIX_PROGS/ef-filter" kill "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_rounded
}

@test "seccomp EPERM, ENOSYS or kill installed after upgrades began: back to 1ms waits, program lives" {
	# The kill filter arrives after a successful probe without any filter: the
	# library notices the new filter and probes again in a child.
	for how in eperm enosys kill; do
		run preload "$EPOLLFIX_PROGS/ef-sleep" --count 200 --filter-after 100 "$how"
		assert_success
		# Half the sleeps upgraded, half not: the median sits between; min and max show both.
		[ "$(field min_us)" -lt "$ROUNDED_US" ] || fail "$output"
		[ "$(field max_us)" -gt "$ROUNDED_US" ] || fail "$output"
	done
}
