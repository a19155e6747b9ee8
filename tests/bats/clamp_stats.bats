#!/usr/bin/env bats
# The busy-loop clamp and the stats report, on real programs.

setup() {
	load helpers
}

# report_value KEY: the text after "epollfix[pid] KEY: " in $output.
report_value() {
	sed -n "s/^epollfix\[[0-9]*\] $1: //p" <<<"$output" | head -1
}

# assert_unclamped SECONDS: the busy loop of $output ran free. How much of a
# core it got is the machine's load; how often it polled in that time is not
# within reach of a clamp: a 1 ms clamp allows about 1,000 polls a second, a
# free loop makes hundreds of thousands even on a small share of a core.
assert_unclamped() {
	local polls
	polls=$(field polls)
	[ "${polls:-0}" -gt $(awk -v s="$1" 'BEGIN { printf "%d", s * 20000 }') ] ||
		fail "only ${polls:-no} polls in $1 s: clamped? $output"
}

@test "busy loop: free without the clamp, under 10% of a core with EPOLLFIX_CLAMP=1ms" {
	run preload "$EPOLLFIX_PROGS/ef-busy" --seconds 1
	assert_success
	assert_unclamped 1
	without=$(field cpu_pct)
	run preload EPOLLFIX_CLAMP=1ms "$EPOLLFIX_PROGS/ef-busy" --seconds 1
	assert_success
	with=$(field cpu_pct)
	[ "$with" -lt 10 ] || fail "with the clamp ${with}% CPU (without: ${without}%)"
}

@test "busy loop through epoll_pwait is clamped too" {
	run preload EPOLLFIX_CLAMP=1ms "$EPOLLFIX_PROGS/ef-busy" --seconds 1 --api pwait
	assert_success
	[ "$(field cpu_pct)" -lt 10 ] || fail "$output"
}

@test "a clamp set at run time through the API reaches a thread already busy polling" {
	for api in wait pwait; do
		run preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-busy" --seconds 1.5 --api $api \
			--set-after-ms 500 clamp=1ms
		assert_success
		after=$(field cpu_pct_after)
		[ -n "$after" ] && [ "$after" -lt 25 ] || fail "$api: CPU after the clamp was set: $output"
		clamped=$(report_value clamped)
		[ "${clamped:-0}" -gt 100 ] || fail "$api: clamped polls '$clamped': $output"
	done
}

@test "clamped waits return at once on readiness: every event, none waits for the clamp" {
	# A 100ms clamp makes a missed wake-up impossible to overlook: events arrive
	# every 5ms, so any that waited for the clamp would be 10s of ms late.
	run preload EPOLLFIX_CLAMP=100ms "$EPOLLFIX_PROGS/ef-busy" --seconds 1 --writer-us 5000
	assert_success
	w=$(field written) r=$(field read)
	[ "$w" -gt 100 ] && [ "$w" = "$r" ] || fail "written $w, read $r: $output"
	# An event left to the clamp would wait half of it, 50 ms, in the median;
	# 20 ms leaves room for a loaded machine's stalls.
	[ "$(field latency_median_us)" -lt 20000 ] || fail "$output"
	# Any single event: no clamped wait ended empty while one was there from
	# before it began (ef-busy's missed). Not its latency: one stall of the
	# loaded machine between a write and its read made one event 137 ms late.
	[ "$(field missed)" = 0 ] || fail "a wait did not return an event: $output"
	run preload EPOLLFIX_CLAMP=100ms EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-busy" --seconds 0.5 --writer-us 5000
	assert_success
	[ "$(report_value clamped)" -gt 10 ] || fail "the clamp never engaged: $output"
}

@test "sub-ms clamp goes through epoll_pwait2; without it, rounds up to 1ms" {
	run preload EPOLLFIX_CLAMP=100us EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-busy" --seconds 0.5
	assert_success
	[ "$(field cpu_pct)" -lt 50 ] || fail "$output"
	assert_line --regexp "epoll_pwait2: available"
	# The launcher's filter trusted, so the library asks, and hears ENOSYS.
	run preload EPOLLFIX_CLAMP=100us EPOLLFIX_STATS=1 EPOLLFIX_SECCOMP=trust \
		"$EPOLLFIX_PROGS/ef-filter" enosys "$EPOLLFIX_PROGS/ef-busy" --seconds 0.5
	assert_success
	[ "$(field cpu_pct)" -lt 10 ] || fail "$output"
	assert_line --regexp "epoll_pwait2: unavailable \(ENOSYS"
	# About 500 whole-ms waits fit in 0.5s; fewer on a loaded machine.
	[ "$(report_value "fell back")" -gt 100 ] || fail "$output"
}

@test "asyncio with ready callbacks and sleeps: the clamp leaves its polls alone" {
	need_glibc
	py=$(python_bin) || skip "no python3"
	run preload EPOLLFIX_CLAMP=1ms EPOLLFIX_STATS=1 "$py" "$PROGS_SRC/asyncio_mix.py" 20
	assert_success
	clamped=$(report_value clamped)
	# The report must also show that the loop had long runs of empty polls:
	# only the gap rule keeps them from being clamped.
	streak=$(report_value "empty zero-timeout polls" | sed 's/.*longest streak //')
	[ "$streak" -gt 16 ] || fail "the program never polled 16 times in a row with nothing ready"
	# Each clamped poll adds at most the clamp, 1 ms, to the run: fewer than
	# 10 bound what the clamp costs it by a count, which load cannot move
	# (elapsed times compared across runs can, by any amount).
	[ "$clamped" -lt 10 ] || fail "asyncio's ready-callback polls were clamped $clamped times: $output"
}

@test "report counts match the program's calls (epoll_wait and epoll_pwait)" {
	for api in wait pwait; do
		run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-calls" --api "$api" \
			--zero 100 --one 20 --ready 10 --long 5
		assert_success
		output=$stderr
		if [ "$api" = wait ]; then
			assert_equal "$(report_value calls)" "135 (epoll_wait 135, epoll_pwait 0)"
		else
			assert_equal "$(report_value calls)" "135 (epoll_wait 0, epoll_pwait 135)"
		fi
		assert_equal "$(report_value "by timeout")" "negative 10, 0 100, 1ms 20, longer 5"
		assert_equal "$(report_value upgraded)" 20
		assert_equal "$(report_value clamped)" 0
		assert_equal "$(report_value "passed through")" 115
		assert_equal "$(report_value "empty zero-timeout polls")" "100, longest streak 100"
		assert_equal "$(report_value epoll_pwait2)" available
	done
}

@test "report counts: zero-timeout polls that find events, between streaks of empty ones" {
	for api in wait pwait; do
		run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-calls" --api "$api" \
			--zero 100 --one 0 --ready 0 --long 0 --zero-found 30
		assert_success
		output=$stderr
		assert_equal "$(report_value "by timeout")" "negative 0, 0 430, 1ms 0, longer 0"
		assert_equal "$(report_value "passed through")" 430
		assert_equal "$(report_value "empty zero-timeout polls")" "400, longest streak 100"
		run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-calls" --api "$api" \
			--zero 5 --one 0 --ready 0 --long 0 --zero-found 3
		assert_success
		output=$stderr
		assert_equal "$(report_value "empty zero-timeout polls")" "35, longest streak 10"
	done
}

@test "report counts add up over threads" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-calls" --threads 8 \
		--zero 50 --one 5 --ready 3 --long 2
	assert_success
	output=$stderr
	assert_equal "$(report_value calls)" "480 (epoll_wait 480, epoll_pwait 0)"
	assert_equal "$(report_value "by timeout")" "negative 24, 0 400, 1ms 40, longer 16"
	assert_equal "$(report_value "empty zero-timeout polls")" "400, longest streak 50"
}

@test "report: one thread's waits from two call sites, taken in turn, each counted in its own line" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-calls" --zero 0 --one 30 \
		--one-other 12 --ready 0 --long 0
	assert_success
	output=$stderr
	assert_equal "$(report_value upgraded)" 42
	counts=$(grep -o 'site: ef-calls: [^;]*; [0-9]* waits upgraded' <<<"$output" |
		grep -o '[0-9]* waits' | sort -n | tr '\n' ' ')
	assert_equal "$counts" "12 waits 30 waits "
}

@test "a forking program: each process reports its own calls, once, to its own file" {
	dir=$(mktemp -d)
	run preload EPOLLFIX_STATS="$dir/report.%p" "$EPOLLFIX_PROGS/ef-calls" --fork --threads 2 \
		--zero 30 --one 4 --ready 2 --long 1
	assert_success
	files=("$dir"/report.*)
	[ "${#files[@]}" = 2 ] || fail "expected 2 reports: ${files[*]}"
	for f in "${files[@]}"; do
		output=$(cat "$f")
		assert_equal "$(grep -c ' report: ' "$f")" 1
		assert_equal "$(report_value calls)" "74 (epoll_wait 74, epoll_pwait 0)"
		assert_equal "$(report_value "by timeout")" "negative 4, 0 60, 1ms 8, longer 2"
	done
	rm -rf "$dir"
}

@test "reports of concurrent processes never interleave mid-line" {
	dir=$(mktemp -d)
	for i in 1 2 3 4 5 6; do
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS="$dir/all" "$EPOLLFIX_PROGS/ef-calls" --fork &
	done
	wait
	run cat "$dir/all"
	assert_equal "$(grep -c ' report: ' "$dir/all")" 12
	# Every line is a whole report line of one process.
	assert_equal "$(grep -c 'epollfix\[.*epollfix\[' "$dir/all")" 0
	assert_equal "$(grep -cvE '^epollfix\[[0-9]+\] [a-z0-9_ -]+: ' "$dir/all")" 0
	rm -rf "$dir"
}

@test "a long empty streak with the clamp off earns a hint naming EPOLLFIX_CLAMP" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-busy" --seconds 0.2
	assert_success
	output=$stderr
	assert_output --regexp "hint: a busy loop of [0-9]+ empty zero-timeout polls in a row .* EPOLLFIX_CLAMP=1ms"
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_CLAMP=1ms "$EPOLLFIX_PROGS/ef-busy" --seconds 0.2
	output=$stderr
	refute_output --partial "hint:"
}

@test "stats report to an unwritable path falls back to stderr with a warning" {
	run --separate-stderr preload EPOLLFIX_STATS=/nonexistent/dir/r.%p "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	assert_equal "$(head -1 <<<"$stderr")" \
		"epollfix: EPOLLFIX_STATS='/nonexistent/dir/r.%p' cannot be opened (No such file or directory); the report goes to stderr"
	output=$stderr
	assert_equal "$(report_value calls)" "135 (epoll_wait 135, epoll_pwait 0)"
}

@test "EPOLLFIX_LOG=quiet silences both EPOLLFIX_STATS warnings; the report still goes to stderr" {
	long=/tmp/$(printf 'x%.0s' {1..5000})
	for stats in /nonexistent/dir/r.%p "$long"; do
		run --separate-stderr preload EPOLLFIX_STATS="$stats" "$EPOLLFIX_PROGS/ef-calls"
		assert_success
		[ "$(grep -c '^epollfix: EPOLLFIX_STATS' <<<"$stderr")" = 1 ] || fail "no warning: $stderr"
		run --separate-stderr preload EPOLLFIX_LOG=quiet EPOLLFIX_STATS="$stats" "$EPOLLFIX_PROGS/ef-calls"
		assert_success
		[ "$(grep -c '^epollfix: ' <<<"$stderr")" = 0 ] || fail "quiet, yet: $stderr"
		output=$stderr
		assert_equal "$(report_value calls)" "135 (epoll_wait 135, epoll_pwait 0)"
	done
}

@test "bad clamp values warn and the program runs unclamped" {
	run --separate-stderr preload EPOLLFIX_CLAMP=soon "$EPOLLFIX_PROGS/ef-busy" --seconds 0.3
	assert_success
	assert_equal "$stderr" "epollfix: EPOLLFIX_CLAMP='soon' is not a duration (like 50us); using off"
	assert_unclamped 0.3
	run --separate-stderr preload EPOLLFIX_CLAMP=1ms EPOLLFIX_CLAMP_GAP=-1us "$EPOLLFIX_PROGS/ef-busy" --seconds 0.3
	assert_success
	assert_equal "$stderr" "epollfix: EPOLLFIX_CLAMP_GAP='-1us' is negative (1ns to 1s); using 1us"
	[ "$(field cpu_pct)" -lt 10 ] || fail "$output"
}
