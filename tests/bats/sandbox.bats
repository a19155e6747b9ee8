#!/usr/bin/env bats
# Seccomp sandboxes never kill the host for the library: a filter that kills
# on prctl, on new processes, on exit or on epoll_pwait2, installed by the
# program or by its launcher before exec, leaves the program running as it
# runs without the library. (tests/progs/sandbox.c builds the filters.)

load helpers

SB() { "$EPOLLFIX_PROGS/ef-sandbox" "$@"; }

# in_container COMMAND...: COMMAND as PID 1 of a PID namespace of its own,
# with its own /proc, as a container runtime starts a container's program
# (the filters come after, from ef-sandbox, as the runtime installs its
# profile before the program starts).
in_container() {
	[ "$(id -u)" = 0 ] || skip "a PID namespace of its own needs root"
	command -v unshare >/dev/null || skip_missing "no unshare (util-linux)"
	unshare --pid --fork --mount-proc "$@"
}

# report_says TEXT: the report on stderr holds TEXT.
report_says() {
	grep -qF -- "$1" <<<"$stderr" || fail "the report does not say '$1': $stderr"
}

@test "sandbox: a filter the program installs that kills prctl: the waits are still upgraded, without touching slack" {
	run preload "$EPOLLFIX_PROGS/ef-sandbox" kill-prctl loop 100
	assert_success
	assert_upgraded
	run preload "$EPOLLFIX_PROGS/ef-sandbox" kill-prctl loop 100 seccomp
	assert_success
	assert_upgraded
}

@test "sandbox: a filter that kills new processes, installed by the program or its launcher, kills nothing" {
	run preload "$EPOLLFIX_PROGS/ef-sandbox" kill-fork loop 100
	assert_success
	assert_upgraded
	run --separate-stderr SB kill-fork exec env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 \
		"$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_rounded
	report_says 'epoll_pwait2: unavailable (an unknown seccomp filter was in force at start, outside a container'
}

@test "sandbox: in a container, a launcher's filter that allows epoll_pwait2 and prctl: upgraded with nothing set, the probe asked once" {
	run --separate-stderr in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec \
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_upgraded
	report_says 'epoll_pwait2: available'
	# EPOLLFIX_SECCOMP=probe does the same outside a container; safe never asks.
	run --separate-stderr SB allow exec env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 \
		EPOLLFIX_SECCOMP=probe "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_upgraded
	run --separate-stderr in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec \
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 EPOLLFIX_SECCOMP=safe "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_rounded
	report_says 'epoll_pwait2: unavailable (a seccomp filter of unknown content was in force at start; EPOLLFIX_SECCOMP=probe would ask a child)'
	# One child, made without SIGCHLD, whatever the number of threads waiting.
	command -v strace >/dev/null || skip_missing "no strace"
	run in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec strace -f -qq -e trace=clone,clone3 \
		env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-threads" 20
	assert_success
	[ "$(grep -c 'clone(child_stack=NULL, flags=CLONE_FILES[|)]' <<<"$output")" = 1 ] ||
		fail "not one probe child: $output"
}

# probes FILE: the probe children in an strace log of clone calls.
probes() {
	grep -c 'clone(child_stack=NULL, flags=CLONE_FILES' "$1" || true
}

@test "sandbox: in a container, the programs a shell runs take its answer instead of probing; a filter added since, or an answer from elsewhere, is probed again" {
	need_glibc # the system's shell and /bin/true
	command -v strace >/dev/null || skip_missing "no strace"
	local t=$BATS_TEST_TMPDIR
	# A shell and the six programs it runs: one probe, the shell's.
	run --separate-stderr in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec strace -f -qq -o "$t/loop" \
		-e trace=clone,clone3 -E LD_PRELOAD="$EPOLLFIX_LIB" -E EPOLLFIX_STATS=1 \
		/bin/sh -c 'for i in 1 2 3 4 5; do /bin/true; done; "$1" --count 40' sh "$EPOLLFIX_PROGS/ef-sleep"
	assert_success
	assert_upgraded
	[ "$(probes "$t/loop")" = 1 ] || fail "not one probe: $(cat "$t/loop")"
	grep -q 'epoll_pwait2: available' <<<"$stderr" || fail "$stderr"
	# The answer it was handed, as the last program saw it.
	local answer
	answer=$(in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec env LD_PRELOAD="$EPOLLFIX_LIB" \
		/bin/sh -c 'env' | sed -n 's/^EPOLLFIX_PROBED=//p')
	[[ $answer == 1:* ]] || fail "no answer handed on: '$answer'"
	# A program that adds a filter and execs: what it runs probes again.
	in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec strace -f -qq -o "$t/added" \
		-e trace=clone,clone3 -E LD_PRELOAD="$EPOLLFIX_LIB" \
		/bin/sh -c '"$1" allow exec /bin/true' sh "$EPOLLFIX_PROGS/ef-sandbox"
	[ "$(probes "$t/added")" = 2 ] || fail "not a probe after the filter added: $(cat "$t/added")"
	# An answer from another container (another namespace, another process
	# of that pid) is no answer.
	in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec strace -f -qq -o "$t/copied" \
		-e trace=clone,clone3 -E LD_PRELOAD="$EPOLLFIX_LIB" \
		/bin/sh -c 'EPOLLFIX_PROBED=$1 /bin/true' sh "$answer"
	[ "$(probes "$t/copied")" = 2 ] || fail "an answer from elsewhere was taken: $(cat "$t/copied")"
	# Under a launcher's filter that kills epoll_pwait2, the shell's probe is
	# killed, and what it runs takes that no: nothing upgraded, nothing killed.
	run --separate-stderr in_container "$EPOLLFIX_PROGS/ef-sandbox" kill-pwait2 exec \
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 /bin/sh -c '"$1" --count 300' sh "$EPOLLFIX_PROGS/ef-sleep"
	assert_success
	assert_rounded
	grep -q 'epoll_pwait2: unavailable (a probe was killed by signal 31 (SIGSYS' <<<"$stderr" || fail "$stderr"
}

@test "sandbox: in a container, a filter that kills, traps, refuses or never answers epoll_pwait2 or prctl: the program runs as without, the report says why" {
	local rules why
	for rules in kill-pwait2 trap-pwait2 kill-prctl enosys-pwait2 einval-pwait2 eperm-fork notify-pwait2; do
		case $rules in
		kill-* | trap-*) why='a probe was killed by signal 31 (SIGSYS' ;;
		enosys-*) why='ENOSYS' ;;
		einval-*) why='Invalid argument' ;;
		eperm-fork) why='the probe, a child under the same filter, could not start (clone refused)' ;;
		notify-*) why='the probe, a child under the same filter, gave no answer in 200 ms' ;;
		esac
		run --separate-stderr in_container "$EPOLLFIX_PROGS/ef-sandbox" "$rules" exec \
			env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --count 700
		assert_success
		assert_rounded
		report_says "upgraded: 0"
		report_says "epoll_pwait2: unavailable ($why"
		run in_container "$EPOLLFIX_PROGS/ef-sandbox" "$rules" exec \
			env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-events" --count 300
		assert_success
	done
}

# calls_after LOG: the system calls of an strace log (-f -qq -o) made by the
# program's process from its first epoll wait on (the library's constructor
# is over by then, dlopen'ed or preloaded; a probe child's calls are its own),
# one name a line, with prctl's option, fcntl's command, open's path and
# write's fd: "prctl:PR_SET_TIMERSLACK", "openat:/proc/self/comm".
calls_after() {
	awk 'NR == 1 { main = $1 }
	$1 != main { next }
	{ sub(/^[0-9]+ +/, ""); sub(/ <unfinished \.\.\.>$/, "") }
	!on && /^epoll_(wait|pwait|pwait2)\(/ { on = 1 }
	!on || /^(\+\+\+|---|<\.\.\.)/ { next }
	{
		name = $0; sub(/\(.*/, "", name)
		split($0, arg, /[(,)]/); split($0, str, /"/)
		if (name == "prctl" || name == "write") name = name ":" arg[2]
		else if (name == "fcntl") name = name ":" arg[3]
		else if (name == "openat" || name == "open") name = name ":" str[2]
		print name
	}' "$1" | sort -u
}

# rule_holds WITHOUT WITH: the calls of WITH (the library's run) that WITHOUT
# (the program's own run) never made are all of doc/design.md's table.
rule_holds() {
	local extra
	extra=$(comm -13 <(calls_after "$1") <(calls_after "$2"))
	grep -q '^epoll_pwait2$' <<<"$extra" || fail "no upgraded wait: $extra"
	local outside
	# (musl opens with open, and sets close-on-exec again with fcntl)
	outside=$(grep -Ev '^(epoll_pwait2|prctl:PR_[GS]ET_TIMERSLACK|getpid|write:2|(open|openat):/proc/self/comm|fcntl: F_SETFD|read|fstat|newfstatat|close|pread64)$' <<<"$extra" || true)
	[ -z "$outside" ] || fail "calls outside the rule: $outside"
	# pread64 (which the program never makes once running) only of the fd
	# the library keeps, at 256 or above.
	! awk 'NR == 1 { main = $1 } !on && $1 == main && / epoll_(wait|pwait|pwait2)\(/ { on = 1 } on' "$2" |
		grep -Eq '^[0-9]+ +pread64\(([0-9]|[0-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5]),' ||
		fail "a pread64 of an fd the library does not keep"
}

@test "sandbox: after start-up the library's own system calls are the rule's (doc/design.md): preloaded, in a container after its probe, and loaded with dlopen" {
	command -v strace >/dev/null || skip_missing "no strace"
	local t=$BATS_TEST_TMPDIR
	strace -f -qq -o "$t/without" "$EPOLLFIX_PROGS/ef-sleep" --count 50 >/dev/null
	strace -f -qq -o "$t/with" -E LD_PRELOAD="$EPOLLFIX_LIB" -E EPOLLFIX_STATS=1 \
		"$EPOLLFIX_PROGS/ef-sleep" --count 50 >/dev/null 2>&1
	rule_holds "$t/without" "$t/with"
	grep -Eq 'open(at)?\((AT_FDCWD, )?"/proc/self/comm"' "$t/with" || fail "no report was made"
	in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec strace -f -qq -o "$t/probed" \
		-E LD_PRELOAD="$EPOLLFIX_LIB" -E EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --count 50 >/dev/null 2>&1
	grep -q 'clone(child_stack=NULL, flags=CLONE_FILES' "$t/probed" || fail "no probe in the container: $(grep -c . "$t/probed") lines"
	rule_holds "$t/without" "$t/probed"
	[ "$EPOLLFIX_LIBC" = glibc ] || return 0 # musl's dlopen refuses the library's TLS
	strace -f -qq -o "$t/dlopen" -E EPOLLFIX_STATS=1 \
		"$EPOLLFIX_PROGS/ef-sleep" --count 50 --dlopen "$EPOLLFIX_LIB" >/dev/null 2>&1
	rule_holds "$t/without" "$t/dlopen"
	grep -q '^[0-9]* *pread64(' "$t/dlopen" || fail "no filter check in the dlopen run"
}

# The hardened programs below forbid themselves, once running, what the
# library's probe needs (clone of a process, waitid, kill): the probe is made,
# answered or killed, and reaped in the constructor, before main(). Under a
# launcher's filter that sends epoll_pwait2 to a listener that never answers,
# the probe is still under way at the end of any short wait for it.
@test "sandbox: in a container, a program that forbids itself waitid and kill once running is never killed by the probe, which is no child of it by then" {
	local launcher
	for launcher in notify-pwait2 allow; do
		run in_container "$EPOLLFIX_PROGS/ef-sandbox" "$launcher" exec \
			env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sandbox" kill-wait,kill-kill loop 100
		assert_success
		if [ "$launcher" = allow ]; then
			assert_upgraded
			[ "$(field children)" = 0 ] || fail "a child at main(): $output"
		else
			assert_rounded
			# The launcher's listener holder, and no probe.
			[ "$(field children)" = 1 ] || fail "not only the holder at main(): $output"
		fi
	done
}

@test "sandbox: in a container, a prefork worker that forbids itself new processes is never killed: it inherits its master's answer" {
	local launcher
	for launcher in notify-pwait2 allow; do
		run in_container "$EPOLLFIX_PROGS/ef-sandbox" "$launcher" exec \
			env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sandbox" kill-fork,kill-wait loop 100 fork
		assert_success
		if [ "$launcher" = allow ]; then assert_upgraded; else assert_rounded; fi
	done
}

@test "sandbox: EPOLLFIX_STATS with a filter the program installs that kills opening files: the report goes to stderr under the name at start, the exit status stays" {
	run --separate-stderr preload_as_configured EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sandbox" kill-open loop 50
	assert_success
	assert_upgraded
	report_says "] report: ef-sandbox"
	run --separate-stderr preload_as_configured EPOLLFIX_STATS="$BATS_TEST_TMPDIR/report.%p" "$EPOLLFIX_PROGS/ef-sandbox" kill-open loop 50
	assert_success
	report_says "EPOLLFIX_STATS='$BATS_TEST_TMPDIR/report.%p' is not opened: a seccomp filter the program installed forbids it; the report goes to stderr"
	report_says "] report: ef-sandbox"
	[ -z "$(ls "$BATS_TEST_TMPDIR" | grep '^report\.')" ] || fail "a report file was made"
}

@test "sandbox: the probe is no child the program can see: no SIGCHLD, no wait() answers it, no process left" {
	need_glibc # the system's python
	local py
	py=$(python_bin) || skip_missing "no python3"
	run --separate-stderr in_container "$EPOLLFIX_PROGS/ef-sandbox" allow exec \
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 "$py" - <<'PY'
import asyncio, os, signal, time
seen = []
signal.signal(signal.SIGCHLD, lambda *a: seen.append(a))
async def main():
    for _ in range(200):
        await asyncio.sleep(50e-6)
asyncio.run(main())
time.sleep(0.05)
try:
    print("wait:", os.waitpid(-1, os.WNOHANG))
except ChildProcessError:
    print("wait: ECHILD")
print("sigchld:", len(seen))
print("children:", len(open("/proc/self/task/%d/children" % os.getpid()).read().split()))
PY
	assert_success
	assert_line "wait: ECHILD"
	assert_line "sigchld: 0"
	assert_line "children: 0"
	report_says 'epoll_pwait2: available'
}

@test "sandbox: a launcher's filter of unknown content is left alone, whatever it would do to epoll_pwait2 or prctl" {
	for rules in kill-pwait2 kill-prctl kill-pwait2,kill-prctl,kill-fork; do
		run SB "$rules" exec env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 40
		assert_success
		assert_rounded
		run SB "$rules" exec env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-events" --count 300
		assert_success
	done
}

@test "sandbox: EPOLLFIX_SECCOMP=trust upgrades under a launcher's filter that allows epoll_pwait2 and prctl" {
	run SB kill-fork exec env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_SECCOMP=trust "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_upgraded
}

@test "sandbox: a filter that kills exit but allows exit_group makes no false 'unusable' (there is no probe child)" {
	run SB kill-exit exec env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_SECCOMP=trust "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_upgraded
}

@test "sandbox: a thread cancelled at its first wait leaves nothing half done: a later filter installs at once, upgrades go on" {
	# Before, the probe's open/read/waitpid were cancellation points: the
	# state stayed "probing", and the next seccomp request spun for ever.
	run timeout 30 env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sandbox" allow loop 100 cancel-first
	assert_success
	assert_upgraded
}

@test "sandbox: a TSYNC install that fails (another thread has its own filter) changes nothing" {
	run preload "$EPOLLFIX_PROGS/ef-sandbox" kill-pwait2 loop 100 tsync-fail
	assert_success
	[ "$(field tsync_result)" -gt 0 ] || fail "the install did not fail: $output"
	assert_upgraded
}

@test "sandbox: a filter answering epoll_pwait2 with EINVAL costs one failed call, not one per wait" {
	command -v strace >/dev/null || skip "no strace"
	# Under the program's own filter it is read first: no failed call at all.
	run strace -f -qq -c -e trace=epoll_pwait2 env LD_PRELOAD="$EPOLLFIX_LIB" \
		"$EPOLLFIX_PROGS/ef-sandbox" einval-pwait2 loop 50
	assert_success
	calls=$(awk '$NF == "epoll_pwait2" {print $4}' <<<"$output")
	[ "${calls:-0}" -le 1 ] || fail "$calls epoll_pwait2 calls: $output"
	# Under a launcher's, trusted: the probe, and the first wait that fails.
	run strace -f -qq -c -e trace=epoll_pwait2 "$EPOLLFIX_PROGS/ef-sandbox" einval-pwait2 exec \
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_SECCOMP=trust "$EPOLLFIX_PROGS/ef-sleep" --count 50
	assert_success
	calls=$(awk '$NF == "epoll_pwait2" {print $4}' <<<"$output")
	[ -n "$calls" ] && [ "$calls" -le 2 ] || fail "${calls:-no} epoll_pwait2 calls: $output"
}

@test "sandbox: /proc/self/status is read whole: a long Groups line does not hide Seccomp" {
	[ "$(id -u)" = 0 ] || skip "setting 2000 groups needs root"
	command -v setpriv >/dev/null || skip "no setpriv"
	groups=$(seq -s, 1000 3000)
	run --separate-stderr setpriv --groups "$groups" env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 \
		"$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_upgraded
	grep -q 'epoll_pwait2: available' <<<"$stderr" || fail "$stderr"
	# And a filter after that line is still seen.
	run --separate-stderr setpriv --groups "$groups" "$EPOLLFIX_PROGS/ef-sandbox" allow exec \
		env LD_PRELOAD="$EPOLLFIX_LIB" EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	grep -q 'unknown seccomp filter was in force at start' <<<"$stderr" || fail "$stderr"
}

@test "seccomp: loaded with dlopen under a launcher's filter (trust), the filter count is read before each upgraded wait, and a later filter that kills epoll_pwait2 or prctl kills nothing" {
	need_glibc # musl's dlopen refuses the library's TLS
	command -v strace >/dev/null || skip_missing "no strace"
	local t=$BATS_TEST_TMPDIR
	run --separate-stderr strace -f -qq -o "$t/trace" "$EPOLLFIX_PROGS/ef-sandbox" allow exec \
		env EPOLLFIX_SECCOMP=trust EPOLLFIX_STATS=1 "$EPOLLFIX_PROGS/ef-sleep" --count 100 --dlopen "$EPOLLFIX_LIB"
	assert_success
	grep -q 'epoll_pwait2: available' <<<"$stderr" || fail "$stderr"
	# The count it reads (pread64 of the fd it holds, 256 or above), never
	# PR_GET_SECCOMP (which cannot tell a second filter from the launcher's).
	local waits reads
	waits=$(grep -c 'epoll_pwait2([0-9]' "$t/trace" || true)
	reads=$(grep -Ec 'pread64\((25[6-9]|2[6-9][0-9]|[3-9][0-9][0-9]|[0-9]{4,}),' "$t/trace" || true)
	[ "$waits" -ge 50 ] || fail "only $waits upgraded waits"
	[ "$reads" -ge "$waits" ] || fail "$reads readings of the count for $waits waits"
	! grep -q 'PR_GET_SECCOMP' "$t/trace" || fail "asked PR_GET_SECCOMP under a filter"
	local what
	for what in pwait2 prctl; do
		run "$EPOLLFIX_PROGS/ef-sandbox" allow exec env EPOLLFIX_SECCOMP=trust \
			"$EPOLLFIX_PROGS/ef-dl-filter" "$EPOLLFIX_LIB" "$what" prctl 20
		assert_success
		assert_output --partial "found=1"
	done
}

@test "seccomp: loaded with dlopen, the library survives a filter installed through libc that kills epoll_pwait2, prctl or openat, also by a signal handler during an upgraded wait" {
	# musl's dlopen refuses a library with initial-exec TLS, as this one's is.
	need_glibc
	# handler: one thread, the filter installed by a SIGALRM handler during
	# a 5 s upgraded wait, which ends in EINTR: the count is read again
	# before the slack's prctl (a single thread's wait that ends otherwise
	# is not read after).
	local vias=(prctl syscall handler)
	[ "$EPOLLFIX_LIBC" = glibc ] && vias+=(libseccomp)
	# Also with an interposer of prctl preloaded (the ASan runtime): it
	# forwards to libc's, which comes before the dlopen'ed library.
	local asan front=("")
	asan=$(asan_runtime) && front+=("$asan")
	for pre in "${front[@]}"; do
		for what in pwait2 prctl openat; do
			for via in "${vias[@]}"; do
				local how="${pre:+behind $pre: }$what through $via"
				run --separate-stderr env EPOLLFIX_LOG=debug \
					${pre:+ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 LD_PRELOAD="$pre"} \
					"$EPOLLFIX_PROGS/ef-dl-filter" "$EPOLLFIX_LIB" "$what" "$via" 20
				[ "$status" -eq 0 ] || fail "$how: rc $status: $output $stderr"
				# Exact before the filter (the library used epoll_pwait2 and
				# its slack), none after but the polls of deadlines already
				# past when the wait was made (a preempted thread: no
				# epoll_pwait2 in them); the byte written was found.
				local to polls
				read -r to polls <<<"$(hinted_between 'ef-dl-filter: the filter is in force' 'ef-dl-filter: the waits counted are over')"
				[ "$(field before_exact)" -gt 0 ] || fail "$how: $output"
				[ "$to" = 0 ] && [ "$(field after_exact)" = "$polls" ] || fail "$how: $output $stderr"
				assert_output --partial "found=1"
			done
		done
	done
}
