#!/usr/bin/env bats
# Never unbounded: the library adds at most EPOLLFIX_MAX_EXTRA wake-ups a second
# to a process (1000 by default, after a burst of half a second's worth),
# whatever its threads do. That a chase given up or rationed ends at its first
# request's bound is the policy's, checked in tests/unit/test_policy.c.

load helpers

MX=$EPOLLFIX_TESTS_BUILD/matrix

# per_s FIELD_COUNT FIELD_MS: a count over its window, per second.
per_s() {
	awk -v n="$(field "$1")" -v ms="$(field "$2")" 'BEGIN { printf "%d", n * 1000 / ms }'
}

@test "ceiling: a 1 ms ticker, one thread or 64, gets at most the documented added wake-ups" {
	[ -x "$MX/ef-m-ticker" ] || skip "no ef-m-ticker"
	for threads in 1 64; do
		run --separate-stderr preload EPOLLFIX_STATS=1 "$MX/ef-m-ticker" --ms 1500 --threads "$threads"
		assert_success
		with=$(per_s after_ticks after_ms)
		# Without the library each thread returns at most 1,000 times a
		# second (a 1 ms wait on an idle set never ends sooner, whatever the
		# load); the library adds at most 1,000 a second to the process, and
		# the burst of 500, spread over the 1.4 s window.
		bound=$((threads * 1000 + 1000 + 500 * 1000 / $(field after_ms) + 20))
		[ "$with" -le "$bound" ] ||
			fail "$threads thread(s): $with returns/s with the library, over $bound: $output"
		grep -q '] rationed: [1-9][0-9]* (waits left as asked: more than 1000 added' <<<"$stderr" ||
			fail "nothing rationed: $stderr"
	done
}

@test "ceiling: EPOLLFIX_MAX_EXTRA=off leaves the stream its SUBMS steps (the cost it bounds)" {
	[ -x "$MX/ef-m-ticker" ] || skip "no ef-m-ticker"
	run preload EPOLLFIX_MAX_EXTRA=off "$MX/ef-m-ticker" --ms 1000
	assert_success
	# Judged by the library's report, which load cannot change (how many
	# returns a second a loaded machine lets through can): every wait of the
	# stream upgraded, none rationed (the first test's ceiling rations this
	# same stream).
	local calls up r
	calls=$(report_count calls) up=$(report_count upgraded) r=$(report_count rationed)
	[ "${calls:-0}" -gt 0 ] && [ "$up" = "$calls" ] || fail "off: $up of $calls waits upgraded: $output"
	[ "${r:-0}" = 0 ] || fail "off: $r rationed: $output"
}

@test "ceiling: a never-ending stream that wants 50 us keeps it when listed as a sub-ms caller" {
	[ -x "$MX/ef-m-libev" ] || skip "no ef-m-libev"
	# 3000 timers of 50 us: far more added wake-ups than the ceiling lets by.
	run preload "$MX/ef-m-libev" --us 50 --count 3000
	assert_success
	[ "$(field lateness_p90_us)" -gt 500 ] || fail "not rationed: $output"
	run preload EPOLLFIX_SUBMS_CALLERS=libev.so "$MX/ef-m-libev" --us 50 --count 3000
	assert_success
	# Judged by the library's report, which load cannot change: none
	# rationed, and the waits upgraded (not quite all: a timer whose deadline
	# a stall let pass is a poll, not a 1 ms wait).
	local r u
	r=$(report_count rationed) u=$(report_count upgraded)
	[ "${r:-0}" = 0 ] || fail "rationed $r though listed: $output"
	[ "${u:-0}" -ge 1500 ] || fail "upgraded ${u:-none} of 3000: $output"
}
