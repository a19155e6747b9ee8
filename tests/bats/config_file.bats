#!/usr/bin/env bats
# The system configuration file (epollfix.conf), through EPOLLFIX_CONFIG so that
# no test touches the machine's own sysconfdir.

setup() {
	load helpers
	conf=$BATS_TEST_TMPDIR/epollfix.conf
}

report_value() {
	sed -n "s/^epollfix\[[0-9]*\] $1: //p" <<<"$output" | head -1
}

# run_calls [VAR=value...]: ef-calls with the library and a report on stderr,
# the report in $output.
run_calls() {
	run --separate-stderr preload EPOLLFIX_CONFIG="$conf" EPOLLFIX_STATS=1 "$@" "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	output=$stderr
	lines=("${stderr_lines[@]}")
}

@test "config file: its values take effect" {
	printf '# the host\nsubms = 20us\nmax-ms = 3\n\nadapt = off  # every wait\n' >"$conf"
	run_calls
	assert_equal "$(report_value policy)" \
		"disable=0 subms=20us max-ms=3 slack=1us log=warn clamp=off clamp-after=16 clamp-gap=1us adapt=off max-extra=1000 seccomp=auto go=auto"
	refute_output --partial "epollfix: "
}

@test "config file: one of exactly the largest size is read; one byte more is refused" {
	# 16,383 bytes: a setting, then a comment that fills the rest.
	{ printf 'subms = 20us\n#'; head -c $((16383 - 15)) /dev/zero | tr '\0' x; printf '\n'; } >"$conf"
	[ "$(stat -c %s "$conf")" = 16383 ] || fail "the file is $(stat -c %s "$conf") bytes"
	run_calls
	refute_output --partial "epollfix: "
	[[ "$(report_value policy)" == "disable=0 subms=20us "* ]] || fail "$output"
	printf 'x' >>"$conf"
	run_calls
	assert_output --partial "is longer than 16383 bytes; ignored"
	[[ "$(report_value policy)" == "disable=0 subms=50us "* ]] || fail "$output"
}

@test "config file: the environment overrides it" {
	printf 'subms = 20us\nmax-ms = 3\n' >"$conf"
	run_calls EPOLLFIX_SUBMS=30us
	[[ "$(report_value policy)" == "disable=0 subms=30us max-ms=3 "* ]] || fail "$output"
}

@test "config file: only = ... leaves other programs alone; stats = FILE writes there" {
	printf 'only = some-other-program\n' >"$conf"
	run preload EPOLLFIX_CONFIG="$conf" "$EPOLLFIX_PROGS/ef-sleep" --count 50
	assert_rounded
	printf 'only = ef-sleep\nstats = %s\n' "$BATS_TEST_TMPDIR/report.%p" >"$conf"
	run preload_as_configured EPOLLFIX_CONFIG="$conf" "$EPOLLFIX_PROGS/ef-sleep" --count 50
	assert_upgraded
	grep -q '^epollfix\[[0-9]*\] upgraded: ' "$BATS_TEST_TMPDIR"/report.* || fail "no report file"
}

@test "config file: a world- or group-writable file is ignored with a warning" {
	printf 'subms = 20us\n' >"$conf"
	for mode in 666 664; do
		chmod "$mode" "$conf"
		run_calls
		assert_line "epollfix: $conf is writable by group or others; ignored"
		[[ "$(report_value policy)" == "disable=0 subms=50us "* ]] || fail "mode $mode: $output"
	done
}

@test "config file: a file owned by another user is ignored with a warning" {
	[ "$(id -u)" = 0 ] || skip "needs root to give the file away"
	id nobody >/dev/null 2>&1 || skip "needs user nobody"
	printf 'subms = 20us\n' >"$conf"
	chown nobody "$conf"
	run_calls
	assert_line "epollfix: $conf is owned by neither root nor this process's user but by uid $(id -u nobody); ignored"
	[[ "$(report_value policy)" == "disable=0 subms=50us "* ]] || fail "$output"
}

@test "config file: bad lines give one warning each, naming the file, the line and the text" {
	printf 'subms = 20us\nsubms = abc\nfrobnicate = 1\nmax-ms 3\n' >"$conf"
	run_calls
	assert_line "epollfix: $conf:2: 'subms = abc' is not a duration (like 50us); using 50us"
	assert_line "epollfix: $conf:3: 'frobnicate = 1' is not a setting of epollfix; ignored"
	assert_line "epollfix: $conf:4: 'max-ms 3' is not key = value; ignored"
	[ "$(grep -c '^epollfix: ' <<<"$output")" = 3 ] || fail "$output"
}

@test "config file: a missing file is silent; a FIFO is refused at once" {
	run_calls EPOLLFIX_CONFIG="$BATS_TEST_TMPDIR/none.conf"
	refute_output --partial "epollfix: "
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	run --separate-stderr timeout 10 env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" \
		EPOLLFIX_CONFIG="$BATS_TEST_TMPDIR/fifo" "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	assert_equal "$stderr" "epollfix: $BATS_TEST_TMPDIR/fifo is not a regular file; ignored"
}

@test "epollfix --check shows each setting, its value and where it came from" {
	printf 'subms = 20us\n\nmax-ms = 3\n' >"$conf"
	run env EPOLLFIX_CONFIG="$conf" EPOLLFIX_CLAMP=1ms "$EPOLLFIX_CMD" --check --log=quiet
	assert_line "config file:  $conf (read)"
	assert_line --regexp "^  subms +20us +$conf:1\$"
	assert_line --regexp "^  max-ms +3 +$conf:3\$"
	assert_line --regexp "^  clamp +1ms +environment \(EPOLLFIX_CLAMP\)\$"
	assert_line --regexp "^  log +quiet +environment \(EPOLLFIX_LOG\)\$"
	assert_line --regexp "^  slack +1us +default\$"
	assert_line --regexp "^  only +unset +default\$"
	run env EPOLLFIX_CONFIG="$BATS_TEST_TMPDIR/none" "$EPOLLFIX_CMD" --check
	assert_line "config file:  $BATS_TEST_TMPDIR/none (none)"
}

@test "epollfix --config=FILE reaches the library" {
	printf 'max-ms = 4\n' >"$conf"
	run --separate-stderr "$EPOLLFIX_CMD" --config="$conf" --stats "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	output=$stderr
	[[ "$(report_value policy)" == "disable=0 subms=50us max-ms=4 "* ]] || fail "$output"
}
