#!/usr/bin/env bats
# Exact timeouts said by the program (epollfix_hint_ns, epollfix_epoll_wait_ns):
# a hinted wait takes no guess, a stale hint is dropped and counted, and a hint
# belongs to the thread that gave it.

load helpers

# report_n LABEL: the number after "LABEL: " in the exit report on stderr.
report_n() {
	sed -n "s/^epollfix\[[0-9]*\] $1: \([0-9]*\).*/\1/p" <<<"$stderr" | head -1
}

@test "hint: 700 us sleeps said exactly cost one wait each and come back well inside the millisecond" {
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 700 --count 200 --hint exact
	assert_success
	# The kernel never wakes a timed wait early: one wait per sleep exactly.
	[ "$(field waits)" = 200 ] || fail "$output"
	[ "$(field min_us)" -lt "$ROUNDED_US" ] || fail "none ended before a 1 ms wait could: $output"
	[ "$(report_n hinted)" = 200 ] || fail "$stderr"
	[ "$(report_n upgraded)" = 0 ] || fail "a hinted wait was guessed: $stderr"
	# Each timed out at the program's deadline, and the report says how
	# late; but a poll, the deadline past before the wait was made.
	local to polls
	read -r to polls <<<"$(hinted_between '' '')"
	grep -q "^epollfix\[[0-9]*\] late after timeout: p50 <= [0-9]*us, p99 <= [0-9a-z]*.*($((200 - polls)) waits)$" <<<"$stderr" ||
		fail "no lateness of $((200 - polls)) waits: $stderr"
}

@test "hint: 50 us sleeps said exactly are upgraded in one wait each" {
	run --separate-stderr preload "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 50 --count 200 --hint exact
	assert_success
	assert_upgraded
	[ "$(field waits)" = 200 ] || fail "$output"
}

@test "hint: a whole-millisecond hint passes unchanged, one wait per sleep" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 1000 --count 100 --hint exact
	assert_success
	assert_rounded
	[ "$(field waits)" = 100 ] || fail "$output"
	[ "$(report_n hinted)" = 100 ] || fail "$stderr"
}

@test "hint: the program runs without the library, its hints unheard" {
	run "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 50 --count 50 --hint exact
	assert_success
	assert_rounded
}

@test "hint: a hint that does not fit the call is dropped, counted stale, and the call guessed as before" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 300 --count 100 --hint stale
	assert_success
	[ "$(report_n hinted)" = 0 ] || fail "$stderr"
	stale=$(sed -n 's/.*stale hints \([0-9]*\).*/\1/p' <<<"$stderr")
	[ "$stale" = "$(field waits)" ] || fail "stale $stale, waits $(field waits): $stderr"
	# The guessing policy still made these sub-ms: far under a millisecond.
	assert_upgraded
}

@test "hint: a program preempted past its deadline between the hint and the wait polls, its hint taken" {
	# The timeout was computed with the hint (2 ms for 1.5 ms); the deadline
	# passed before the call: a poll, not a stale hint's whole 2 ms wait.
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 1500 --count 20 --hint preempted
	assert_success
	[ "$(field waits)" = 20 ] || fail "$output"
	[ "$(report_n hinted)" = 20 ] || fail "$stderr"
	[ "$(grep -c 'timeout=2ms) hinted: the deadline passed, a poll = 0$' <<<"$stderr")" = 20 ] || fail "$stderr"
}

@test "hint: a hint given on another thread is not taken by this thread's waits" {
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 300 --count 50 --hint other-thread
	assert_success
	[ "$(report_n hinted)" = 0 ] || fail "$stderr"
	# Each wait the policy's: a line of what it did with the 1 ms, none of a
	# hint. (How many waits a sleep takes is the machine's: where making the
	# other thread takes longer than the sleep, as under ASan beside a busy
	# suite, the deadline has passed at the first.)
	local decided
	decided=$(grep -cE 'epoll_wait\(epfd=[0-9]+, timeout=1ms\) (upgraded|passed through)' <<<"$stderr")
	[ "$decided" = "$(field waits)" ] && [ "$decided" -ge 50 ] || fail "$decided decisions for $(field waits) waits: $stderr"
	! grep -q 'ms) hinted: ' <<<"$stderr" || fail "$stderr"
}

@test "hint: a program that loads the library with dlopen waits exactly through epollfix_epoll_wait_ns" {
	# musl's dlopen refuses a library with initial-exec TLS, which the wait
	# path's thread-local block is; preloaded, musl loads it at start.
	need_glibc
	run --separate-stderr env EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 200 --count 100 --dlopen "$EPOLLFIX_LIB"
	assert_success
	[ "$(field waits)" = 100 ] || fail "$output"
	[ "$(field min_us)" -lt "$ROUNDED_US" ] || fail "none ended before a 1 ms wait could: $output"
	[ "$(report_n hinted)" = 100 ] || fail "$stderr"
}

@test "hint: with epoll_pwait2 refused a hinted wait runs the real call with its own timeout" {
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-sleep" --sleep-us 300 --count 40 --hint exact --filter-after 0 eperm
	assert_success
	assert_rounded
	[ "$(field waits)" = 40 ] || fail "$output"
	# Every one, but a poll, the deadline past before the wait was made.
	local to polls
	read -r to polls <<<"$(hinted_between '' '')"
	[ "$to" = 0 ] && [ "$(report_n 'fell back')" = $((40 - polls)) ] || fail "$stderr"
}

@test "hint: a hint is its call's only: after EINTR past the deadline the thread's next wait does not take it" {
	run preload "$EPOLLFIX_PROGS/ef-hint-edges" eintr
	assert_success
	assert_output "after_eintr_hinted=0"
}

@test "hint: a hint of 0 or 1 ns makes the 1 ms wait a poll, not a millisecond" {
	run --separate-stderr preload EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-hint-edges" tiny
	assert_success
	assert_line "tiny_hinted=2"
	[ "$(grep -c 'epoll_wait(epfd=[0-9]*, timeout=1ms) hinted: the deadline passed, a poll = 0$' <<<"$stderr")" = 2 ] ||
		fail "$stderr"
}

@test "hint: epollfix_epoll_wait_ns near INT64_MAX is the longest wait, with no overflow (UBSan in scripts/sanitize)" {
	run preload "$EPOLLFIX_PROGS/ef-hint-edges" huge
	assert_success
	assert_line "huge_result=5"
	assert_line "huge_longer=5"
	assert_line "huge_negative=0"
}

@test "hint: hinted waits of any length go to the deadline: 1.5 ms, 10.3 ms and 250.7 ms through epoll_pwait2" {
	local us n near over
	for us in 1500:20 10300:20 250700:4; do
		n=${us#*:} us=${us%:*}
		run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-sleep" --sleep-us "$us" --count "$n" --hint exact
		assert_success
		[ "$(field waits)" = "$n" ] || fail "$us: $output"
		[ "$(report_n hinted)" = "$n" ] || fail "$us: $stderr"
		read -r near over _ < <(hinted_to "$stderr" "$us")
		# None past the deadline; most of them within 1 ms of it (a wait cut
		# short by the library would not be).
		[ "$over" = 0 ] && [ $((near * 2)) -ge "$n" ] || fail "$us: $near of $n waits to the deadline, $over past it: $stderr"
		grep -q "^epollfix\[[0-9]*\] late after timeout: .*($n waits)\$" <<<"$stderr" || fail "$us: $stderr"
	done
}

@test "strace: a hinted 10.3 ms wait asks epoll_pwait2 for the time left, no epoll_wait of 11 ms" {
	command -v strace >/dev/null || skip "no strace"
	out="$BATS_TEST_TMPDIR/strace"
	# strace itself is not preloaded: -E gives the library to the traced program only.
	run strace -f -o "$out" -e trace=epoll_wait,epoll_pwait,epoll_pwait2 \
		-E LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" \
		"$EPOLLFIX_PROGS/ef-sleep" --sleep-us 10300 --count 10 --hint exact
	assert_success
	# The time from the hint to the call is a few us, a preempted one longer
	# (3.7 ms once, beside a sanitizer build): at most 10.3 ms, which load
	# can only shorten, never the 11 ms the call asks.
	n=$(grep -cE 'epoll_pwait2\([0-9]*, \[\], [0-9]*, \{tv_sec=0, tv_nsec=([0-9]{1,7}|10[0-2][0-9]{5})\}' "$out" || true)
	[ "$n" = 10 ] || fail "$n of 10 waits asked for the time left: $(cat "$out")"
	! grep -Eq 'epoll_(p)?wait\([0-9]+, .*, 1[01]\)' "$out" || fail "a whole-ms wait: $(cat "$out")"
}
