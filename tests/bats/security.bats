#!/usr/bin/env bats
# Security: a setuid program takes no orders from its caller's environment, and
# the stats file can neither hang the program nor be redirected.

setup() {
	load helpers
	SEC_DIR=
}

teardown() {
	[ -z "$SEC_DIR" ] || rm -rf "$SEC_DIR"
}

# A fresh directory any user can traverse, for files the tests create.
fresh_dir() {
	SEC_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ef-security.XXXXXX")
	chmod 755 "$SEC_DIR"
}

as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

# A setuid-root copy of ef-sleep-linked (the library through DT_NEEDED and an
# absolute runpath, since a setuid program ignores LD_PRELOAD) in $SEC_DIR,
# runnable by nobody: SUID.
setuid_copy() {
	[ "$(id -u)" = 0 ] || skip "needs root to make a setuid-root program"
	command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
	id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || skip "needs user nobody and group nogroup"
	[ -x "$EPOLLFIX_PROGS/ef-sleep-linked" ] || fail "ef-sleep-linked is not built"
	fresh_dir
	if findmnt -no OPTIONS --target "$SEC_DIR" | grep -qw nosuid; then
		skip "$SEC_DIR is on a nosuid filesystem"
	fi
	SUID=$SEC_DIR/ef-sleep-linked
	cp "$EPOLLFIX_PROGS/ef-sleep-linked" "$SUID"
	chown root:root "$SUID"
	chmod 4755 "$SUID"
	as_nobody test -r "$EPOLLFIX_LIB" ||
		skip "nobody cannot read $EPOLLFIX_LIB (a directory on its path is not traversable)"
	# The copy loads the library and takes orders when it is not setuid: what the
	# setuid runs below ignore is really read otherwise.
	run --separate-stderr env EPOLLFIX_SUBMS=abc "$SUID" --count 5
	assert_success
	[[ "$stderr" == *"EPOLLFIX_SUBMS='abc'"* ]] || fail "the linked program does not load the library: $stderr"
}

@test "secure mode: EPOLLFIX_STATS names a path, no file appears and nothing is printed" {
	setuid_copy
	mkdir "$SEC_DIR/out" # root's, mode 755: only the setuid program could write here
	run --separate-stderr as_nobody env EPOLLFIX_STATS="$SEC_DIR/out/report" "$SUID" --count 50
	echo "stdout: $output"
	echo "stderr: $stderr"
	assert_success
	[ ! -e "$SEC_DIR/out/report" ] || fail "a report file appeared: $(ls -l "$SEC_DIR/out/report")"
	[ -z "$stderr" ] || fail "the setuid program printed: $stderr"
	run --separate-stderr as_nobody env EPOLLFIX_STATS=1 "$SUID" --count 50
	echo "stderr: $stderr"
	assert_success
	[ -z "$stderr" ] || fail "EPOLLFIX_STATS=1 printed a report: $stderr"
	assert_upgraded
}

@test "secure mode: EPOLLFIX_SUBMS=abc gives no warning, and the waits are upgraded" {
	setuid_copy
	run --separate-stderr as_nobody env EPOLLFIX_SUBMS=abc "$SUID" --count 50
	echo "stdout: $output"
	echo "stderr: $stderr"
	assert_success
	[ -z "$stderr" ] || fail "a warning: $stderr"
	assert_upgraded
}

@test "secure mode: EPOLLFIX_LOG=debug prints no debug lines" {
	setuid_copy
	run --separate-stderr as_nobody env EPOLLFIX_LOG=debug "$SUID" --count 50
	echo "stdout: $output"
	echo "stderr: $(head -3 <<<"$stderr")"
	assert_success
	[ -z "$stderr" ] || fail "debug lines: $(head -3 <<<"$stderr")"
	assert_upgraded
}

@test "secure mode: EPOLLFIX_DISABLE, ONLY and SKIP are ignored too; the defaults upgrade" {
	setuid_copy
	for v in EPOLLFIX_DISABLE=1 EPOLLFIX_ONLY=nothing-like-this EPOLLFIX_SKIP=ef-sleep-linked \
		EPOLLFIX_SUBMS=off EPOLLFIX_MAX_MS=0; do
		run --separate-stderr as_nobody env "$v" "$SUID" --count 50
		echo "$v: $output / $stderr"
		assert_success
		[ -z "$stderr" ] || fail "$v: $stderr"
		assert_upgraded
	done
}

@test "secure mode: EPOLLFIX_CONFIG is ignored" {
	setuid_copy
	printf 'log = debug\n' >"$SEC_DIR/epollfix.conf"
	run --separate-stderr as_nobody env EPOLLFIX_CONFIG="$SEC_DIR/epollfix.conf" "$SUID" --count 20
	echo "stderr: $(head -3 <<<"$stderr")"
	assert_success
	[ -z "$stderr" ] || fail "the caller's file was read"
	# The same file without setuid is read: the test can tell.
	run --separate-stderr env EPOLLFIX_CONFIG="$SEC_DIR/epollfix.conf" "$SUID" --count 5
	[[ "$stderr" == *"upgraded to 50us"* ]] || fail "not read without setuid either: $stderr"
}

@test "secure mode: the system file holds; the environment cannot override it; no report file" {
	setuid_copy
	# A library-only build whose sysconfdir is a temporary directory, never the
	# machine's own /etc.
	local args=() build=$SEC_DIR/build prefix=$SEC_DIR/prefix
	[ "$EPOLLFIX_LIBC" != musl ] || args=(--native-file "$EPOLLFIX_SRC/musl.ini")
	meson setup "${args[@]}" --prefix="$prefix" "$build" "$EPOLLFIX_SRC" >"$SEC_DIR/setup.log" 2>&1 ||
		fail "meson setup: $(tail -5 "$SEC_DIR/setup.log")"
	ninja -C "$build" src/libepollfix.so tests/progs/ef-sleep-linked >"$SEC_DIR/ninja.log" 2>&1 ||
		fail "ninja: $(tail -5 "$SEC_DIR/ninja.log")"
	prog=$SEC_DIR/ef-sleep-sysconf
	cp "$build/tests/progs/ef-sleep-linked" "$prog"
	chown root:root "$prog"
	chmod 4755 "$prog"
	mkdir -p "$prefix/etc" "$SEC_DIR/out"
	# adapt = off: every upgraded wait one SUBMS step, so each is logged
	# "upgraded to 20us" (auto aims some at the deadlines it predicts).
	printf '# the host\nlog = debug\nsubms = 20us\nadapt = off\nstats = %s\n' "$SEC_DIR/out/report" \
		>"$prefix/etc/epollfix.conf"
	run --separate-stderr as_nobody env EPOLLFIX_SUBMS=30us EPOLLFIX_LOG=quiet EPOLLFIX_DISABLE=1 \
		EPOLLFIX_CONFIG=/dev/null "$prog" --count 20
	echo "stdout: $output"
	echo "stderr: $(head -3 <<<"$stderr")"
	assert_success
	assert_upgraded
	[ "$(grep -c 'upgraded to 20us' <<<"$stderr")" -ge 20 ] || fail "the file's subms and log do not hold"
	[[ "$stderr" != *30us* ]] || fail "the environment overrode the file"
	[ ! -e "$SEC_DIR/out/report" ] || fail "secure execution wrote the file's report"
	# Without setuid the environment wins, and the report is written. meson test
	# sets LD_LIBRARY_PATH to the main build, which would win over the runpath;
	# helpers.bash points EPOLLFIX_CONFIG away from the system file.
	run --separate-stderr env -u LD_LIBRARY_PATH -u EPOLLFIX_CONFIG EPOLLFIX_SUBMS=30us "$prog" --count 5
	assert_success
	[[ "$stderr" == *"upgraded to 30us"* ]] || fail "without setuid: $(head -3 <<<"$stderr")"
	[ -s "$SEC_DIR/out/report" ] || fail "without setuid the file's report is written"
}

# The report through the file and stderr fallbacks, without setuid. A wait on a
# FIFO with no reader would block for ever, so every run has a timeout.
preload_timeout() {
	timeout 10 env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" "$@"
}

# stats_refused PATH: the program runs with EPOLLFIX_STATS=PATH, exits at once,
# warns once and reports on stderr.
stats_refused() {
	run --separate-stderr preload_timeout EPOLLFIX_STATS="$1" "$EPOLLFIX_PROGS/ef-sleep" --count 20
	echo "status: $status"
	echo "stderr: $stderr"
	assert_success
	[ "$(grep -c "EPOLLFIX_STATS='$1'" <<<"$stderr")" = 1 ] || fail "no single warning naming EPOLLFIX_STATS"
	grep -q "^epollfix: EPOLLFIX_STATS='$1' .*; the report goes to stderr$" <<<"$stderr" ||
		fail "the warning does not say where the report goes"
	grep -q '^epollfix\[[0-9]*\] calls: ' <<<"$stderr" || fail "no report on stderr"
}

@test "stats to a FIFO with no reader: the program exits promptly, the report goes to stderr" {
	fresh_dir
	mkfifo "$SEC_DIR/fifo"
	stats_refused "$SEC_DIR/fifo"
}

@test "stats to a FIFO with a reader is refused too: only regular files are written" {
	fresh_dir
	mkfifo "$SEC_DIR/fifo"
	# The test holds the FIFO open for reading (read-write never blocks), so the
	# library's open finds a reader.
	exec 4<>"$SEC_DIR/fifo"
	stats_refused "$SEC_DIR/fifo"
	echo end >&4
	read -r -t 5 -u 4 first
	exec 4>&-
	assert_equal "$first" end
}

@test "stats to a symlink: the target is untouched, the report goes to stderr" {
	fresh_dir
	echo precious >"$SEC_DIR/target"
	ln -s "$SEC_DIR/target" "$SEC_DIR/link"
	stats_refused "$SEC_DIR/link"
	assert_equal "$(cat "$SEC_DIR/target")" precious
}

@test "stats to a directory: the report goes to stderr" {
	fresh_dir
	stats_refused "$SEC_DIR"
}

@test "stats to a device (/dev/null): the report goes to stderr" {
	stats_refused /dev/null
}

@test "stats file: created within the umask, and never group- or world-writable" {
	fresh_dir
	for mask in 077 022 000; do
		run bash -c 'umask "$1"; shift; exec "$@"' umask "$mask" \
			env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" \
			EPOLLFIX_STATS="$SEC_DIR/report.$mask" "$EPOLLFIX_PROGS/ef-sleep" --count 5
		assert_success
		mode=$(stat -c %a "$SEC_DIR/report.$mask")
		case $mask in
		077) assert_equal "$mode" 600 ;;
		*) assert_equal "$mode" 644 ;;
		esac
		grep -q '^epollfix\[[0-9]*\] calls: ' "$SEC_DIR/report.$mask" || fail "no report in the file"
	done
}
