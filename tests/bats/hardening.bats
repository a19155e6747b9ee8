#!/usr/bin/env bats
# Hardening: the library never loses an event, never changes a call's
# result or errno, and keeps working across threads, signals, cancellation,
# fork, vfork, exec, dlopen, early constructors, another preload library and
# seccomp filters. Each test compares with the same run without the library
# where that is the oracle.

setup() {
	load helpers
	H=$EPOLLFIX_TESTS_BUILD/hardening
	[ -x "$H/ef-stress" ] || fail "hardening programs not built in $H"
}

# preload_with first|last LIB command...: the library and another preload LIB,
# LIB after or before it in LD_PRELOAD.
preload_with() {
	local order=$1 other=$2
	shift 2
	local extra=${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}
	if [ "$order" = first ]; then
		env LD_PRELOAD="$extra$EPOLLFIX_LIB:$other" "$@"
	else
		env LD_PRELOAD="$extra$other:$EPOLLFIX_LIB" "$@"
	fi
}

# The value of NAME=value in $output, any characters but blanks.
word() {
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$output" | head -1
}

assert_all_read() {
	assert_success
	local total
	total=$(word written)
	[ -n "$total" ] && [ "$total" -gt 0 ] || fail "nothing written: $output"
	assert_output --partial "written=$total read=$total lost=0 dup=0 bad=0 errors=0"
}

# ---- stress ---------------------------------------------------------------

@test "stress: every event read exactly once without the library (the oracle)" {
	run "$H/ef-stress" --messages 3000 --seconds 60
	assert_all_read
	assert_output --partial "library=absent"
}

@test "stress: every event read exactly once with the library (LT, ET, ONESHOT, EXCLUSIVE)" {
	run preload "$H/ef-stress" --messages 3000 --seconds 60 --seed 2
	assert_all_read
	[ "$(word upgraded)" -gt 100 ] || fail "too few upgraded waits: $output"
}

@test "stress: every event read exactly once with MAX_MS=5 and the clamp on" {
	run preload EPOLLFIX_MAX_MS=5 EPOLLFIX_CLAMP=200us EPOLLFIX_CLAMP_AFTER=2 EPOLLFIX_CLAMP_GAP=1ms \
		"$H/ef-stress" --messages 3000 --seconds 60 --seed 3
	assert_all_read
	# -1 and 0 pass through; 1, 2 and 5 are all upgraded; some zero polls clamped.
	[ "$(word upgraded)" -gt "$(word t1)" ] || fail "2 and 5 ms not upgraded: $output"
	[ "$(word clamped)" -gt 0 ] || fail "nothing clamped: $output"
}

@test "stress: every event read exactly once when epoll_pwait2 is refused (EPERM, ENOSYS)" {
	for how in eperm enosys; do
		run preload "$EPOLLFIX_PROGS/ef-filter" "$how" "$H/ef-stress" --messages 1000 --seconds 60
		assert_all_read
		assert_output --partial "upgraded=0"
	done
}

@test "stress: a kill-on-epoll_pwait2 filter from the start kills nothing, loses nothing" {
	run preload "$EPOLLFIX_PROGS/ef-filter" kill "$H/ef-stress" --messages 1000 --seconds 60
	assert_all_read
	assert_output --partial "upgraded=0"
}

# ---- semantics: the same output with and without -------------------------

# same MODE... : runs ef-sem MODE without, then with the library (all of
# 1, 2 and 5 ms upgraded), and requires both to succeed with the same output.
same() {
	run "$H/ef-sem" "$@"
	assert_success
	local without=$output
	run preload EPOLLFIX_MAX_MS=5 "$H/ef-sem" "$@"
	assert_success
	[ "$output" = "$without" ] || fail "$(diff <(echo "$without") <(echo "$output"))"
	run preload "$H/ef-sem" "$@"
	assert_success
	[ "$output" = "$without" ] || fail "$(diff <(echo "$without") <(echo "$output"))"
}

@test "bad arguments: EBADF, EINVAL, EFAULT and errno on success, as the real calls" {
	same badargs
	assert_line "ok"
	assert_line --regexp '^events PROT_NONE, one ready +epoll_wait +t=1 +r=-1 errno=EFAULT$'
	assert_line --regexp '^maxevents 0 +epoll_pwait +t=1 +r=-1 errno=EINVAL$'
}

@test "EINTR: a signal with SA_RESTART ends the wait (epoll never restarts)" {
	same eintr
	assert_line "ok"
	assert_line --regexp '^epoll_wait +t=1 +r=-1 errno=EINTR handler=ran$'
}

@test "timeouts INT_MAX, INT_MIN, -2, 1000, 999, 3 return the event" {
	same long
	assert_line "ok"
}

@test "programs calling epoll_pwait2 themselves (libc and raw) are untouched" {
	same pwait2
	run preload "$H/ef-sem" pwait2
	assert_line --regexp '^raw epoll_pwait2 idle 50us +r=0 errno=EXDEV'
}

@test "programs calling epoll_pwait2 under an EPERM filter still see EPERM" {
	run "$EPOLLFIX_PROGS/ef-filter" eperm "$H/ef-sem" pwait2
	assert_success
	local without=$output
	assert_line --regexp '^raw epoll_pwait2 idle 50us +r=-1 errno=EPERM$'
	run preload "$EPOLLFIX_PROGS/ef-filter" eperm "$H/ef-sem" pwait2
	assert_success
	[ "$output" = "$without" ] || fail "$(diff <(echo "$without") <(echo "$output"))"
}

@test "the epoll_pwait signal mask: compared with the run without" {
	run "$EPOLLFIX_PROGS/ef-sigmask"
	assert_success
	local without=$output
	run preload EPOLLFIX_MAX_MS=5 "$EPOLLFIX_PROGS/ef-sigmask"
	assert_success
	[ "$output" = "$without" ] || fail "$(diff <(echo "$without") <(echo "$output"))"
}

@test "cancellation: threads cancelled during waits go (without the library)" {
	run "$H/ef-sem" cancel 60
	assert_success
	assert_output "rounds=60 cancelled=60"
}

@test "cancellation: threads cancelled during upgraded waits go (with the library)" {
	run preload "$H/ef-sem" cancel 60
	assert_success
	assert_output "rounds=60 cancelled=60"
	run preload EPOLLFIX_MAX_MS=5 EPOLLFIX_SUBMS=1ms "$H/ef-sem" cancel 60
	assert_success
	assert_output "rounds=60 cancelled=60"
}

# ---- processes --------------------------------------------------------------

@test "fork from a threaded program (threads waiting, policy changing): children work" {
	run "$H/ef-proc" fork 10
	assert_success
	[ "$(word child_min_median_us)" -gt "$ROUNDED_US" ] || fail "$output"
	run preload "$H/ef-proc" fork 30
	assert_success
	assert_output --partial "children=30 ok=30"
	# Every child's shortest wait ended before a 1 ms wait could have.
	[ "$(word child_max_min_us)" -lt "$ROUNDED_US" ] || fail "$output"
}

@test "fork while another thread probes epoll_pwait2 (seccomp on): children still upgrade" {
	# Without the library every child waits the full 1 ms (the oracle of "stuck").
	run "$H/ef-proc" fork-probe 2
	assert_success
	[ "$(word stuck)" = "$(word children)" ] || fail "$output"
	run preload "$H/ef-proc" fork-probe 10
	assert_success
	assert_output --regexp 'stuck=0$'
}

@test "clone and clone3: any flags, stack or pointer the kernel accepts or refuses give what they give without the library" {
	# Children with their own memory and a thread pointer of their own, or a
	# 256-byte stack, run and exit; refused requests fail with the same errno;
	# nothing crashes. The library runs no code of its own in any child.
	local ways=(tiny-stack vm-vfork clone3-efault clone3-null clone3-short raw-einval clone-einval)
	# In a child with a thread pointer of its own, an instrumented program's
	# own code (the sanitizers' runtime) needs the one it gave up.
	[[ ${EPOLLFIX_SANITIZE:-none} == none ]] && ways+=(settls raw-settls clone3-settls)
	for way in "${ways[@]}"; do
		run "$EPOLLFIX_PROGS/ef-clone-edges" "$way"
		assert_success
		without=$output
		[[ $without == "$way: "* ]] || fail "without the library: $output"
		run preload "$EPOLLFIX_PROGS/ef-clone-edges" "$way"
		assert_success
		assert_output "$without"
	done
}

@test "a raw clone while another thread changes the policy: the child changes it too, never waits on the parent's lock" {
	# No atfork handler runs in such a child: it learns it is new where it
	# enters the library (here epollfix_set) and undoes what another thread
	# of its parent had under way (without that, most of them hang).
	[[ $EPOLLFIX_SANITIZE == *thread* ]] &&
		skip "ThreadSanitizer takes the child of a raw clone for a thread of its parent"
	run preload "$H/ef-proc" clone-set 20
	assert_success
	assert_output "children=20 hung=0 failed=0"
}

@test "vfork + exec and posix_spawn: the child inherits LD_PRELOAD and is upgraded" {
	run preload "$H/ef-proc" vfork-exec "$H/ef-proc" measure
	assert_success
	assert_line "vfork: 0 posix_spawn: 0"
	[ "$(grep -c 'upgraded=40 ' <<<"$output")" = 2 ] || fail "$output"
	run "$H/ef-proc" vfork-exec "$H/ef-proc" measure
	assert_success
	[ "$(grep -c 'library=absent' <<<"$output")" = 2 ] || fail "$output"
}

@test "exec: the new program keeps the library" {
	run preload "$H/ef-proc" exec "$H/ef-proc" measure pwait
	assert_success
	assert_output --partial "upgraded=40 "
	assert_upgraded
}

@test "dlopen'ed code calling epoll_wait is upgraded" {
	run "$H/ef-proc" dlopen "$H/libef-dlwait.so"
	assert_success
	assert_rounded
	run preload "$H/ef-proc" dlopen "$H/libef-dlwait.so"
	assert_success
	assert_upgraded
}

@test "a library constructor waiting before the library's own constructor" {
	run "$H/ef-ctor"
	assert_success
	[ "$(word ctor_median_us)" -gt "$ROUNDED_US" ] || fail "$output"
	run preload "$H/ef-ctor"
	assert_success
	[ "$(word ctor_min_us)" -lt "$ROUNDED_US" ] || fail "$output"
	assert_output --partial "upgraded=80 "
	# The environment is read on that first call: EPOLLFIX_DISABLE applies
	# already (every wait 1 ms or more: load never shortens one).
	run preload EPOLLFIX_DISABLE=1 "$H/ef-ctor"
	assert_success
	[ "$(word ctor_min_us)" -gt "$ROUNDED_US" ] || fail "$output"
	assert_output --partial "upgraded=0 "
	if [ "$EPOLLFIX_LIBC" = glibc ]; then
		# That constructor does run first (glibc's loader says so).
		run preload LD_DEBUG=files "$H/ef-ctor"
		order=$(grep -o 'calling init: .*lib\(ef-ctorwait\|epollfix\)\.so' <<<"$output" | sed 's/.*\///')
		assert_equal "$(echo $order)" "libef-ctorwait.so libepollfix.so"
	fi
}

@test "a thread cancelled during the library's first reading of its configuration leaves it working" {
	# AddressSanitizer reports its own thread teardown after the forced unwind
	# of a cancellation (the unwound frames are never unpoisoned).
	[ -z "${EPOLLFIX_PRELOAD_EXTRA:-}" ] || skip "pthread_cancel's unwinding under AddressSanitizer"
	# That reading opens files (cancellation points); before, a cancel there
	# left it "reading" for ever, and every call of the process passed through.
	run preload EF_CTOR_CANCEL=1 "$H/ef-ctor"
	assert_success
	[ "$(word ctor_min_us)" -lt "$ROUNDED_US" ] || fail "$output"
	[ "$(word main_min_us)" -lt "$ROUNDED_US" ] || fail "$output"
}

# ---- another preload library: libfaketime -----------------------------------

faketime_lib() {
	local f
	for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[ -f "$f" ] && echo "$f" && return 0
	done
	return 1
}

@test "libfaketime (also interposes epoll_wait) before and after the library" {
	need_glibc
	ft=$(faketime_lib) || skip "libfaketime not installed (Debian: libfaketime)"
	export FAKETIME="+1d"
	run env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$ft" "$H/ef-proc" measure
	assert_success
	assert_rounded
	for order in first last; do
		run preload_with "$order" "$ft" "$H/ef-proc" measure
		assert_success
		assert_upgraded
		assert_output --partial "upgraded=40 "
		run preload_with "$order" "$ft" "$EPOLLFIX_PROGS/ef-events" --count 500
		assert_success
		assert_line --partial "written=500 read=500"
		run preload_with "$order" "$ft" "$H/ef-sem" badargs
		assert_success
		assert_line "ok"
	done
}

# ---- seccomp after start-up ---------------------------------------------------

@test "seccomp kill filter installed after start-up, before the first upgraded wait" {
	run "$H/ef-sem" late 10 kill
	assert_success
	[ "$(word median_us)" -gt "$ROUNDED_US" ] || fail "$output"
	run preload "$H/ef-sem" late 10 kill
	assert_success
	# Not killed; the original 1 ms waits; every one counted as a fallback.
	[ "$(word median_us)" -gt "$ROUNDED_US" ] || fail "$output"
	assert_output --partial "upgraded=0 "
	assert_output --partial "fell_back=80"
	# And with no wait at all before the filter.
	run preload "$EPOLLFIX_PROGS/ef-sleep" --count 40 --filter-after 0 kill
	assert_success
	assert_rounded
}

@test "seccomp EPERM or ENOSYS after start-up, before the first upgraded wait" {
	for how in eperm enosys; do
		run preload "$H/ef-sem" late 10 "$how"
		assert_success
		[ "$(word median_us)" -gt "$ROUNDED_US" ] || fail "$output"
		assert_output --partial "upgraded=0 "
	done
}

@test "seccomp kill filter from the start: threads making their first upgraded waits together" {
	run preload "$EPOLLFIX_PROGS/ef-filter" kill "$H/ef-proc" fork 5
	assert_success
	assert_output --partial "children=5 ok=5"
	[ "$(word child_min_median_us)" -gt "$ROUNDED_US" ] || fail "$output"
}

@test "1000 threads in turn: each takes a slot a thread before it gave back, and every call is counted" {
	run --separate-stderr preload EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-threads" 1000
	assert_success
	calls=$(field calls)
	grep -q "] calls: $calls (" <<<"$stderr" || fail "the report does not count $calls calls: $stderr"
	# Before, threads past the 255th shared the last slot for good.
	grep -q '] threads: 1001 that waited (0 shared the last slot' <<<"$stderr" || fail "$stderr"
}

# ---- loaded with dlopen: no fd of the program's closed, read or kept -------
# (musl's dlopen refuses a library with initial-exec TLS, as this one's is)

@test "dlopen: a daemon that closes every fd and opens its logs on the lowest numbers keeps both, in a fork child and after a thread ends" {
	need_glibc
	run "$H/ef-dl-fds" "$EPOLLFIX_LIB" daemon "$BATS_TEST_TMPDIR"
	assert_success
	assert_output --partial "child_write=ok main_write=ok"
	[ "$(field after_exact)" -gt 0 ] || fail "the waits after were not made exact: $output"
	[ "$(cat "$BATS_TEST_TMPDIR/child.log")" = child ] || fail "child.log: $(cat "$BATS_TEST_TMPDIR/child.log")"
	[ "$(cat "$BATS_TEST_TMPDIR/main.log")" = main ] || fail "main.log: $(cat "$BATS_TEST_TMPDIR/main.log")"
}

@test "dlopen: a socket dup2'd onto fd 3 is still there in a fork child" {
	need_glibc
	run "$H/ef-dl-fds" "$EPOLLFIX_LIB" dup2
	assert_success
	assert_output "child_write=ok"
}

@test "dlopen: a pipe or /dev/kmsg on the lowest number keeps what it holds, and waits stay exact" {
	need_glibc
	run "$H/ef-dl-fds" "$EPOLLFIX_LIB" pipe
	assert_success
	assert_output --partial "fd=3 read=kept"
	[ "$(field after_exact)" -gt 0 ] || fail "the waits after were not made exact: $output"
	# /dev/kmsg hands each fd its records in turn: a read by anyone else
	# consumes one (reading it needs CAP_SYSLOG or dmesg_restrict=0).
	run "$H/ef-dl-fds" "$EPOLLFIX_LIB" kmsg
	assert_success
	[ "$output" != kmsg=unreadable ] || skip "/dev/kmsg cannot be read here"
	assert_output "fd=3 first_record=kept"
}

@test "dlopen: 10 rounds of 300 threads alive together leak no fd, with and without 40 pthread keys made first" {
	need_glibc
	# Past 255 threads alive they share a slot; with 40 keys made first the
	# library's key is past glibc's first 32: neither has a key destructor.
	for keys in 0 40; do
		run "$H/ef-dl-fds" "$EPOLLFIX_LIB" threads 10 300 "$keys"
		assert_success
		assert_output --partial "threads=3000 leaked=0 "
		[ "$(field exact)" -gt 0 ] || fail "keys=$keys: no wait made exact: $output"
	done
}

@test "dlopen: RLIMIT_NOFILE 64, 44 fds held, 16 threads waiting: 12 more opens all succeed" {
	need_glibc
	run "$H/ef-dl-fds" "$EPOLLFIX_LIB" nofile
	assert_success
	assert_output "opened=12 emfile=0"
}

@test "dlopen: waits made while no fd is free are exact (the filter check reads a file held open since the dlopen), and so are the next ones; the thread's own slack comes back; the report names no seccomp filter" {
	need_glibc
	run --separate-stderr env EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$H/ef-dl-fds" "$EPOLLFIX_LIB" emfile
	assert_success
	assert_output "emfile_exact=20 after_exact=20 slack=own"
	grep -q '] epoll_pwait2: available$' <<<"$stderr" || fail "$stderr"
	! grep -q "seccomp filter" <<<"$stderr" || fail "a seccomp filter named where there is none: $stderr"
}

@test "dlopen: without a /proc to read filter counts from, waits pass through and the report says why" {
	need_glibc
	[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null || skip "needs root and mount namespaces"
	# A sanitizer's runtime reads /proc/self/maps at start: without /proc
	# the instrumented program cannot start.
	[[ ${EPOLLFIX_SANITIZE:-none} == none ]] || skip "a sanitizer needs /proc (${EPOLLFIX_SANITIZE})"
	run --separate-stderr unshare -m sh -c 'mount -t tmpfs none /proc && exec env EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$@"' \
		sh "$H/ef-dl-fds" "$EPOLLFIX_LIB" emfile
	assert_success
	# Never to the deadline: the exact ones are polls.
	local to polls to_after polls_after
	read -r to polls <<<"$(hinted_between 'ef-dl-fds: no fd free' 'ef-dl-fds: fds free')"
	read -r to_after polls_after <<<"$(hinted_between 'ef-dl-fds: fds free' '')"
	[ "$to" = 0 ] && [ "$to_after" = 0 ] || fail "$stderr"
	assert_output "emfile_exact=$polls after_exact=$polls_after slack=own"
	grep -q '] epoll_pwait2: unavailable (loaded with dlopen, it cannot see seccomp filters in /proc/self/status (No such file or directory))$' <<<"$stderr" ||
		fail "$stderr"
}
