#!/usr/bin/env bats
# What the library costs where it acts: the timer slack is the library's for
# the upgraded waits only, and the program's own is kept; seccomp filters are learned of
# where they are installed, never asked for before a wait; prctl and syscall,
# which it watches for both, pass everything else through unchanged.

setup() {
	load helpers
}

# The debug log's line of an upgraded 1 ms wait: the library's slack was in
# force for it (the strace test below sees it set around each one).
UPGRADED_1MS='timeout=1ms\) upgraded to [0-9.]+[num]?s = 0'

@test "slack: a program's own PR_SET_TIMERSLACK between upgraded waits is kept, and in force between them" {
	run "$EPOLLFIX_PROGS/ef-slack" own
	assert_success
	assert_output --partial "get_in_run=200000 real_in_run=200000 get_after=200000 real_after=200000"
	run preload EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-slack" own
	assert_success
	assert_output --regexp "$UPGRADED_1MS"
	# Between upgraded waits the program's code runs with its own slack, the
	# one it reads and the one in force (/proc), as without the library.
	assert_output --partial "get_in_run=200000 real_in_run=200000 get_after=200000 real_after=200000"
}

@test "slack: the thread's own is back as soon as an upgraded wait returns" {
	run "$EPOLLFIX_PROGS/ef-slack" restore
	assert_success
	own=$(field real_after_poll)
	[ "$own" -gt 1000 ] || fail "the default slack is already 1us: $output"
	run preload EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-slack" restore
	assert_success
	assert_output --regexp "$UPGRADED_1MS"
	assert_output --partial "real_after_wait=$own real_after_poll=$own "
}

@test "slack: fork between upgraded waits gives the child the thread's own, as its default too" {
	run "$EPOLLFIX_PROGS/ef-slack" fork
	assert_success
	own=$(field child_got)
	run preload "$EPOLLFIX_PROGS/ef-slack" fork
	assert_success
	assert_output --partial "child_got=$own child_default=$own "
}

@test "slack: a child made without atfork handlers (system, popen, posix_spawn, vfork, clone), a new thread or a thread libc makes (timer, aio) starts with the program's slack" {
	for way in system popen posix_spawn posix_spawnp vfork clone syscall-clone thread timer aio; do
		# ThreadSanitizer knows nothing of the threads glibc makes itself for
		# a SIGEV_THREAD timer or aio notification (by its internal
		# pthread_create): their first malloc crashes the program, library
		# or not.
		[[ $EPOLLFIX_SANITIZE == *thread* && $way =~ ^(timer|aio)$ ]] && continue
		run "$EPOLLFIX_PROGS/ef-slack" spawn "$way"
		assert_success
		own=$(field child)
		[ "$own" -gt 0 ] || fail "$way without the library: $output"
		run preload EPOLLFIX_LOG=debug "$EPOLLFIX_PROGS/ef-slack" spawn "$way"
		assert_success
		# The wait before it was upgraded: the library's slack was in force
		# for it. (Its length is no sign: the process's first wait also
		# probes epoll_pwait2, 2.5 ms under the sanitizers.)
		assert_output --regexp "$UPGRADED_1MS"
		[ "$(field child)" = "$own" ] || fail "$way: the child got $(field child), not $own: $output"
	done
}

@test "fork: a child made by syscall(SYS_clone), syscall(SYS_clone3) or libc's clone counts its own calls, as a fork child does" {
	for way in fork clone clone3 libc-clone; do
		# Its own line only: on the stack the program gave libc's clone,
		# AddressSanitizer warns on stderr that it cannot tell the stack's
		# bounds at the child's _exit.
		run --separate-stderr preload "$EPOLLFIX_PROGS/ef-raw-clone" "$way" 20
		assert_success
		# Its three polls, not the parent's twenty waits before them.
		assert_output "child_calls=3"
	done
}

@test "seccomp: a kill filter installed after start-up through prctl, syscall(SYS_seccomp) or libseccomp never kills" {
	local vias=(prctl syscall)
	[ "$EPOLLFIX_LIBC" = glibc ] && vias+=(libseccomp)
	for via in "${vias[@]}"; do
		run preload "$EPOLLFIX_PROGS/ef-late-filter" "$via" kill 40
		assert_success
		[ "$(field before_min_us)" -lt "$ROUNDED_US" ] || fail "$via: $output"
		[ "$(field after_median_us)" -gt "$ROUNDED_US" ] || fail "$via: $output"
	done
}

# still_upgraded CMD...: for each way a filter that allows epoll_pwait2 goes
# in (prctl, syscall, libseccomp), the late-filter program run under CMD
# upgrades its waits before the filter and after it.
still_upgraded() {
	local via vias=(prctl syscall)
	[ "$EPOLLFIX_LIBC" = glibc ] && vias+=(libseccomp)
	for via in "${vias[@]}"; do
		run "$@" "$EPOLLFIX_PROGS/ef-late-filter" "$via" allow 40
		assert_success
		[ "$(field before_min_us)" -lt "$ROUNDED_US" ] || fail "$via: $output"
		[ "$(field after_min_us)" -lt "$ROUNDED_US" ] || fail "$via: $output"
	done
}

@test "seccomp: a filter that allows epoll_pwait2, installed later, leaves the upgrades on" {
	still_upgraded preload
}

@test "seccomp: preloaded behind another interposer of prctl (the ASan runtime), a filter that allows epoll_pwait2, installed later, leaves the upgrades on" {
	need_glibc
	asan=$(asan_runtime) || skip "no AddressSanitizer runtime (gcc's libasan)"
	# The interposer's prctl is the one every object calls; it forwards to
	# the library's, which reads the filter before it is in force.
	still_upgraded env ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
		LD_PRELOAD="$asan:$EPOLLFIX_LIB"
}

# system calls per upgraded wait in a run of 200 asyncio 700 us sleeps, from strace
@test "strace: each upgraded wait between the lowering of the slack and its restore, nothing else asked" {
	need_glibc
	py=$(python_bin) || skip "no python3"
	command -v strace >/dev/null || skip "no strace"
	out="$BATS_TEST_TMPDIR/strace"
	# strace itself is not preloaded: -E gives the library to the traced program only.
	run strace -f -o "$out" -e trace=prctl,epoll_wait,epoll_pwait2 \
		-E LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" \
		"$py" "$PROGS_SRC/asyncio_sleep.py" 700e-6 200
	assert_success
	# The probe (epfd -1) is not a wait.
	waits=$(grep -c 'epoll_pwait2([0-9]' "$out" || true)
	get=$(grep -c 'PR_GET_TIMERSLACK' "$out" || true)
	all=$(grep -c 'prctl(' "$out" || true)
	[ "$waits" -ge 150 ] || fail "only $waits upgraded waits"
	grep -q PR_GET_SECCOMP "$out" && fail "asks the kernel for seccomp"
	[ "$get" -le 1 ] || fail "$get PR_GET_TIMERSLACK"
	own=$(sed -n 's/.*PR_GET_TIMERSLACK.*= \([0-9]*\)$/\1/p' "$out")
	[ "${own:-0}" -gt 1000 ] || fail "the thread's own slack: '$own'"
	# Every upgraded wait comes right after the lowering and right before
	# the restore of the thread's own: nothing of the program runs between.
	bad=$(awk -v own="$own" '
		/epoll_pwait2\([0-9]/ { w = NR; if (prev !~ /PR_SET_TIMERSLACK, 1000\)/) n++ }
		w && NR == w + 1 && $0 !~ ("PR_SET_TIMERSLACK, " own "\\)") { n++ }
		{ prev = $0 } END { print n + 0 }' "$out")
	[ "$bad" = 0 ] || fail "$bad upgraded waits not between a lowering and a restore"
	echo "# waits=$waits prctl=$all" >&3
	# Everything the library asked: the wait and its two prctl, and the one read.
	(( waits + all <= 3 * waits + 1 )) || fail "$((waits + all)) system calls for $waits waits"
}

@test "strace: a thread whose own slack is already EPOLLFIX_SLACK or finer waits with one system call, nothing lowered or put back" {
	need_glibc
	py=$(python_bin) || skip "no python3"
	command -v strace >/dev/null || skip "no strace"
	out="$BATS_TEST_TMPDIR/strace"
	local own waits sets
	for own in 1000 500; do
		# The program sets its own slack first (EPOLLFIX_SLACK is 1 us).
		run strace -f -o "$out" -e trace=prctl,epoll_pwait2 \
			-E LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" \
			"$py" -c 'import ctypes, runpy, sys
ctypes.CDLL(None).prctl(29, int(sys.argv[1]), 0, 0, 0)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$own" "$PROGS_SRC/asyncio_sleep.py" 700e-6 200
		assert_success
		waits=$(grep -c 'epoll_pwait2([0-9]' "$out" || true)
		sets=$(grep -c 'PR_SET_TIMERSLACK' "$out" || true)
		[ "$waits" -ge 150 ] || fail "$own: only $waits upgraded waits"
		# The program's own, and no other.
		[ "$sets" = 1 ] || fail "$own: $sets PR_SET_TIMERSLACK for $waits waits"
		grep -q "PR_SET_TIMERSLACK, $own)" "$out" || fail "$own: the program's own was not set"
	done
}

@test "strace: under epollfix.enable(), one thread: each upgraded wait reads the filter count once, before it, and never asks PR_GET_SECCOMP" {
	need_glibc # musl's dlopen refuses the library's TLS
	py=$(python_bin) || skip "no python3"
	command -v strace >/dev/null || skip "no strace"
	[ -d "$EPOLLFIX_BUILD/python/site" ] || skip "no Python package in the build"
	out="$BATS_TEST_TMPDIR/strace"
	# No preload: the library loaded with dlopen, as pip users have it.
	run env PYTHONPATH="$EPOLLFIX_BUILD/python/site" strace -f -o "$out" \
		-e trace=prctl,epoll_pwait2,fstat,newfstatat,pread64 "$py" -c 'import epollfix, runpy, sys
epollfix.enable(sys.argv[1])
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$EPOLLFIX_LIB" "$PROGS_SRC/asyncio_sleep.py" 700e-6 200
	assert_success
	local waits reads stats
	waits=$(grep -c 'epoll_pwait2([0-9]' "$out" || true)
	# Of the fd the library holds, at 256 or above.
	reads=$(grep -Ec 'pread64\((25[6-9]|2[6-9][0-9]|[3-9][0-9][0-9]|[0-9]{4,}),' "$out" || true)
	stats=$(grep -Ec 'fstat(at)?\((25[6-9]|2[6-9][0-9]|[3-9][0-9][0-9]|[0-9]{4,}),' "$out" || true)
	[ "$waits" -ge 150 ] || fail "only $waits upgraded waits"
	! grep -q PR_GET_SECCOMP "$out" || fail "asks the kernel for seccomp (a filter that kills prctl would kill there)"
	# One read before each wait (the first use reads twice, and enable()
	# once), none after: one thread, no signal (doc/python.md).
	(( reads >= waits && reads <= waits + 3 )) || fail "$reads readings of the count for $waits waits"
	(( stats == reads )) || fail "$stats fstat of the held fd for $reads readings"
	echo "# waits=$waits reads=$reads" >&3
}

@test "prctl and syscall: every other request passes through unchanged, errno included" {
	need_glibc
	py=$(python_bin) || skip "no python3"
	run preload "$py" -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("getpid", libc.syscall(39) == os.getpid())                # SYS_getpid
print("enosys", libc.syscall(-1), ctypes.get_errno())            # no such call: ENOSYS
ctypes.set_errno(0)
print("dumpable", libc.prctl(3, 0, 0, 0, 0), ctypes.get_errno())  # PR_GET_DUMPABLE
print("einval", libc.prctl(99999, 0, 0, 0, 0), ctypes.get_errno())
name = ctypes.create_string_buffer(16)
libc.prctl(15, b"ef-name", 0, 0, 0)                             # PR_SET_NAME
libc.prctl(16, name, 0, 0, 0)                                   # PR_GET_NAME
print("name", name.value.decode())
print("slack", libc.syscall(157, 30, 0, 0, 0, 0))               # prctl(PR_GET_TIMERSLACK) raw
'
	assert_success
	assert_line "getpid True"
	assert_line "enosys -1 38"
	assert_line "dumpable 1 0"
	assert_line "einval -1 22"
	assert_line "name ef-name"
	assert_line --regexp "^slack [1-9][0-9]*$"
}
