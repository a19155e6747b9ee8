#!/usr/bin/env bats
# The Python integration: with the library preloaded, select.epoll and
# selectors.EpollSelector pass their exact timeouts (epollfix._epollfix), so
# asyncio and every loop on them waits exactly, one wake-up per timer;
# everything else about select.epoll is unchanged. The package is laid out by
# the build as site-packages (build/python/site) and put in a virtualenv, so
# its start-up hook (epollfix.pth) runs as it does once installed.

setup_file() {
	load helpers
	[ -d "$EPOLLFIX_BUILD/python/site" ] || return 0
	py=$(python_bin) || return 0
	venv=$BATS_FILE_TMPDIR/venv
	"$py" -m venv --without-pip "$venv"
	site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	ln -s "$EPOLLFIX_BUILD"/python/site/* "$site/"
}

setup() {
	load helpers
	need_glibc
	[ -d "$EPOLLFIX_BUILD/python/site" ] || skip "no CPython headers: the extension is not built"
	vpy=$BATS_FILE_TMPDIR/venv/bin/python
	[ -x "$vpy" ] || skip "no python3 venv"
	sleep_py=$EPOLLFIX_SRC/tests/progs/asyncio_sleep.py
	exact_py=$EPOLLFIX_SRC/tests/progs/py_exact.py
}

# per_timer: the voluntary context switches of the last asyncio_sleep.py run per sleep.
per_timer() {
	local n c
	n=$(field count) c=$(field nvcsw)
	awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", c / n }'
}

@test "python: the start-up hook turns the integration on only with the library, and EPOLLFIX_PYTHON=off keeps it off" {
	run preload "$vpy" "$exact_py" state
	assert_output "active=1"
	run preload EPOLLFIX_PYTHON=off "$vpy" "$exact_py" state
	assert_output "active=0"
	run "$vpy" "$exact_py" state
	assert_output "active=0"
}

@test "python: asyncio 50 us sleeps are exact, one wake-up each" {
	run preload "$vpy" "$sleep_py" 50e-6 200
	assert_success
	assert_upgraded
	awk -v w="$(per_timer)" 'BEGIN { exit !(w <= 1.2) }' || fail "$(per_timer) wake-ups per sleep: $output"
}

@test "python: asyncio 700 us and genuine 1 ms sleeps cost one wake-up each, the policy's steps without it" {
	for s in 700e-6 1e-3; do
		run --separate-stderr preload EPOLLFIX_STATS=1 "$vpy" "$sleep_py" "$s" 200
		assert_success
		awk -v w="$(per_timer)" 'BEGIN { exit !(w <= 1.1) }' || fail "$s: $(per_timer) wake-ups per sleep: $output"
		grep -q '] hinted: [1-9][0-9]* ' <<<"$stderr" || fail "no hinted waits: $stderr"
		grep -q '] upgraded: 0$' <<<"$stderr" || fail "waits were guessed: $stderr"
	done
	# The same sleeps with the integration off go through the guessing policy.
	run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_PYTHON=off "$vpy" "$sleep_py" 700e-6 200
	assert_success
	grep -q '] hinted: 0 ' <<<"$stderr" || fail "$stderr"
}

@test "python: a select.epoll().poll(0.001) ticker wakes once a tick, as without the library" {
	run preload "$vpy" "$EPOLLFIX_SRC/tests/matrix/py_ticker.py" 300
	assert_success
	ticks=$(field ticks) vcsw=$(field vcsw)
	awk -v t="$ticks" -v v="$vcsw" 'BEGIN { exit !(v <= 1.1 * t) }' || fail "$vcsw wake-ups for $ticks ticks"
}

@test "python: poll's errors, keywords and results are CPython's own, with and without the integration" {
	run "$vpy" "$exact_py" errors
	assert_success
	plain=$output
	run preload "$vpy" "$exact_py" errors
	assert_success
	assert_equal "$output" "$plain"
	assert_line --partial "closed=ValueError: I/O operation on closed epoll object"
	assert_line "maxevents0=ValueError: maxevents must be greater than 0, got 0"
}

@test "python: EINTR: a poll interrupted by a signal whose handler returns waits the time left" {
	run preload "$vpy" "$exact_py" eintr
	assert_success
	ms=$(field elapsed_ms)
	[ "$ms" -ge 195 ] && [ "$ms" -lt 400 ] || fail "$output"
}

@test "python: after fork, and from two threads at once, polls are exact" {
	run preload "$vpy" "$exact_py" fork
	assert_success
	assert_output "child_ok=1"
	run preload "$vpy" "$exact_py" threads
	assert_success
	w=$(sed -n 's/per_poll_wakeups=//p' <<<"$output")
	awk -v w="$w" 'BEGIN { exit !(w <= 1.2) }' || fail "$output"
}

@test "python: epollfix.enable() without the preload: exact waits through the loaded library, counted in its report" {
	run "$vpy" "$exact_py" enable "$EPOLLFIX_LIB"
	assert_output "active=1"
	run --separate-stderr env EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$vpy" -c '
import epollfix, runpy, sys
epollfix.enable(sys.argv[1])
sys.argv = [sys.argv[2], "50e-6", "200"]
runpy.run_path(sys.argv[0], run_name="__main__")' "$EPOLLFIX_LIB" "$sleep_py"
	assert_success
	assert_upgraded
	# Every 1 ms wait was hinted; a slow turn (the sanitizer builds) may find a
	# 50 us timer already due and poll with 0 instead, so not always 200. A
	# turn preempted between the hint and the wait, past the deadline, is a
	# hinted poll, which the report counts with timeout 0: its debug line
	# says so.
	ms=$(sed -n 's/.*] by timeout: .*, 1ms \([0-9]*\),.*/\1/p' <<<"$stderr")
	polled=$(grep -c 'timeout=1ms) hinted: the deadline passed, a poll = 0$' <<<"$stderr" || true)
	[ $((${ms:-0} + polled)) -ge 190 ] || fail "only ${ms:-no} 1 ms waits and $polled hinted polls: $stderr"
	grep -q "] hinted: $((ms + polled)) (exact timeouts the program said), stale hints 0$" <<<"$stderr" ||
		fail "not every 1 ms wait hinted ($ms waits of 1 ms, $polled hinted polls): $stderr"
	# The errors are CPython's own here too.
	run "$vpy" "$exact_py" errors
	plain=$output
	run "$vpy" -c '
import epollfix, runpy, sys
epollfix.enable(sys.argv[1])
sys.argv = [sys.argv[2], "errors"]
runpy.run_path(sys.argv[0], run_name="__main__")' "$EPOLLFIX_LIB" "$exact_py"
	assert_equal "$output" "$plain"
}

@test "python: interpreter start-up with the package and no library imports nothing of it" {
	# What start-up costs is measured by bench/python_poll_cost.py; what
	# keeps it small is that, without the library, the package's .pth line
	# imports nothing: the same modules as an interpreter without the package.
	[ ! -e /etc/ld.so.preload ] || skip "/etc/ld.so.preload exists: the .pth line reads it"
	"$(python_bin)" -m venv --without-pip "$BATS_TEST_TMPDIR/bare"
	modules() { "$1" -X importtime -c pass 2>&1 | awk -F'|' '/^import time:/ && NR > 1 { gsub(/ /, "", $3); print $3 }' | sort; }
	bare=$(modules "$BATS_TEST_TMPDIR/bare/bin/python")
	with=$(modules "$vpy")
	[ -n "$bare" ] || fail "no -X importtime output"
	grep -q site <<<"$with" || fail "no site module in: $with"
	[ "$with" = "$bare" ] || fail "imported with the package: $(comm -13 <(echo "$bare") <(echo "$with") | tr '\n' ' ')"
	# The same check sees an import: with the library named, the extension is one.
	run env LD_PRELOAD="$EPOLLFIX_LIB" "$vpy" -X importtime -c pass
	grep -q '_epollfix' <<<"$output" || fail "the check cannot see the package's imports: $output"
}

@test "python: epollfix.enable() survives a seccomp filter installed later through libc that kills epoll_pwait2 or prctl" {
	for what in pwait2 prctl; do
		run --separate-stderr env EPOLLFIX_STATS=1 "$vpy" "$EPOLLFIX_SRC/tests/progs/py_late_filter.py" "$EPOLLFIX_LIB" "$what"
		[ "$status" -eq 0 ] || fail "$what: rc $status: $output $stderr"
		assert_output "active=1 woke=1"
		# The sleeps before the filter were exact; after it, the library
		# says why it stopped.
		grep -q '] hinted: [1-9][0-9]* ' <<<"$stderr" || fail "$what: no exact waits: $stderr"
		grep -q 'could not read first' <<<"$stderr" || fail "$what: no reason given: $stderr"
	done
}

@test "python: every timeout CPython refuses is refused with its own error and message, with enable() and with the preload" {
	# Each poll in a subprocess of its own, with a timeout: a wait that blocks
	# for ever is a difference ("hung"), not a hung suite.
	for how in enable preload; do
		if [ "$how" = enable ]; then
			run "$vpy" "$exact_py" bad_timeouts "$EPOLLFIX_LIB"
		else
			run preload "$vpy" "$exact_py" bad_timeouts
		fi
		assert_success
		[ "${#lines[@]}" = 15 ] || fail "$how: $output"
		! grep -v '=same (' <<<"$output" || fail "$how: $output"
		assert_line "nan=same (ValueError: Invalid value NaN (not a number))"
		assert_line "Decimal('0.001')=same (TypeError: timeout must be an integer or None)"
		assert_line "closed:nan=same (ValueError: I/O operation on closed epoll object)"
	done
}

@test "python: a hint is its poll's only: after a handler outlives the deadline the next C-level wait is not hinted" {
	run preload "$vpy" "$exact_py" gives_up
	assert_success
	assert_line "poll=[] epoll_wait=0"
	assert_line "after_hinted=0"
}

@test "python: poll(1.5e-11), under a nanosecond, is a hinted poll and not a millisecond, preloaded and with enable()" {
	run --separate-stderr preload EPOLLFIX_LOG=debug "$vpy" -c 'import select; print(select.epoll().poll(1.5e-11))'
	assert_success
	grep -q 'timeout=1ms) hinted: the deadline passed, a poll = 0$' <<<"$stderr" || fail "$stderr"
	run --separate-stderr env EPOLLFIX_LOG=debug "$vpy" -c '
import epollfix, select, sys
epollfix.enable(sys.argv[1])
print(select.epoll().poll(1.5e-11))' "$EPOLLFIX_LIB"
	assert_success
	grep -q 'timeout=1ms) hinted: the deadline passed, a poll = 0$' <<<"$stderr" || fail "$stderr"
}

# subinterp_check: py_exact.py subinterp's output (in $output) says each
# interpreter's 50 polls were all hinted, whichever enabled first.
subinterp_check() {
	assert_line "sub_enable=True"
	assert_line "main_enable=True"
	assert_line "main_active=True"
	assert_line "sub_hinted=50"
	assert_line "main_hinted=50"
	assert_line "sub_again_hinted=50"
}

@test "python: each interpreter patches its own select.epoll: a subinterpreter's enable() first, then the main one's" {
	run "$vpy" "$exact_py" subinterp "$EPOLLFIX_LIB"
	assert_success
	subinterp_check
	run preload "$vpy" "$exact_py" subinterp
	assert_success
	subinterp_check
}

@test "python: each interpreter patches its own select.epoll on 3.12+ too (isolated subinterpreters, their own GIL)" {
	# Another CPython than the suite's, if this machine has one (pyenv's, or
	# python3.12+ on PATH): the extension built for it here, from the source.
	local other="" p
	for p in python3.14 python3.13 python3.12 $(pyenv root 2>/dev/null)/versions/3.1[2-9]*/bin/python3; do
		p=$(command -v "$p") || continue
		"$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && other=$p && break
	done
	[ -n "$other" ] || skip "no CPython 3.12 or later here"
	inc=$("$other" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	[ -f "$inc/Python.h" ] || skip "no headers for $other"
	suffix=$("$other" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	site=$BATS_TEST_TMPDIR/site
	mkdir -p "$site/epollfix"
	cp "$EPOLLFIX_BUILD"/python/site/epollfix/*.py "$site/epollfix/"
	cc -shared -fPIC -O2 -Wall -Werror -I"$inc" "$EPOLLFIX_SRC/python/epollfix/_epollfix.c" \
		-o "$site/epollfix/_epollfix$suffix" -ldl
	run env PYTHONPATH="$site" "$other" "$exact_py" subinterp "$EPOLLFIX_LIB"
	assert_success
	subinterp_check
	run env PYTHONPATH="$site" "$other" "$exact_py" bad_timeouts "$EPOLLFIX_LIB"
	assert_success
	! grep -v '=same (' <<<"$output" || fail "$other: $output"
}

# deadlines_met STDERR US: the hinted waits of 20 sleeps (the first is not
# hinted) went to epoll_pwait2 for the time left to the deadline: none past
# it (CPython's own wait would be whole ms), most within 1 ms (helpers.bash's
# hinted_to).
deadlines_met() {
	local near over all
	read -r near over all < <(hinted_to "$1" "$2")
	[ "$all" -ge 19 ] && [ "$over" = 0 ] && [ $((near * 2)) -ge "$all" ]
}

@test "python: asyncio sleeps of 1.5 ms and 10.3 ms wait for their deadlines, preloaded and with enable()" {
	for s in 1500 10300; do
		run --separate-stderr preload EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$vpy" "$sleep_py" "${s}e-6" 20
		assert_success
		deadlines_met "$stderr" "$s" || fail "$s us: $(hinted_to "$stderr" "$s") (near, over, all): $stderr"
		grep -q '] late after timeout: .*([1-9][0-9] waits)$' <<<"$stderr" || fail "$s us: $stderr"
		run --separate-stderr env EPOLLFIX_STATS=1 EPOLLFIX_LOG=debug "$vpy" -c '
import epollfix, runpy, sys
epollfix.enable(sys.argv[1])
sys.argv = [sys.argv[2], sys.argv[3], "20"]
runpy.run_path(sys.argv[0], run_name="__main__")' "$EPOLLFIX_LIB" "$sleep_py" "${s}e-6"
		assert_success
		deadlines_met "$stderr" "$s" || fail "enable, $s us: $(hinted_to "$stderr" "$s") (near, over, all): $stderr"
	done
}

@test "python: reexec() refuses a program read from standard input, and re-executes -c, -m and a script file" {
	# The package as a wheel lays it out: the library in epollfix/_native.
	site=$BATS_TEST_TMPDIR/site
	mkdir -p "$site/epollfix/_native" "$BATS_TEST_TMPDIR/mods"
	cp "$EPOLLFIX_BUILD"/python/site/epollfix/* "$site/epollfix/" 2>/dev/null || true
	ln -s "$EPOLLFIX_LIB" "$site/epollfix/_native/libepollfix.so"
	app=$BATS_TEST_TMPDIR/mods/reexec_app.py
	cat >"$app" <<-'PY'
		import epollfix
		print(f"start loaded={epollfix.loaded()}", flush=True)
		print(f"reexec={epollfix.reexec()}", flush=True)
		print("ran to the end")
	PY
	export PYTHONPATH=$site
	for how in redirect pipe dash; do
		case $how in
		redirect) run --separate-stderr "$vpy" <"$app" ;;
		pipe) run --separate-stderr bash -c '"$1" <"$2" | cat' - "$vpy" "$app" ;;
		dash) run --separate-stderr bash -c 'cat "$2" | "$1" -' - "$vpy" "$app" ;;
		esac
		assert_success
		assert_equal "$(grep -c '^start ' <<<"$output")" 1
		assert_line "reexec=False"
		assert_line "ran to the end"
		assert_equal "$(grep -c 'epollfix.reexec(): the program was read from standard input' <<<"$stderr")" 1
	done
	# A pipe named as the script (a shell's <(...)): used up as well.
	run --separate-stderr bash -c 'cat "$2" | "$1" /dev/stdin' - "$vpy" "$app"
	assert_success
	assert_line "reexec=False"
	assert_line "ran to the end"
	grep -q 'epollfix.reexec(): its script /dev/stdin is not a file' <<<"$stderr" || fail "$stderr"
	# What the new interpreter can run again is re-executed: two starts.
	for how in script c m; do
		case $how in
		script) run "$vpy" "$app" ;;
		c) run "$vpy" -c "$(cat "$app")" ;;
		m) run env PYTHONPATH="$site:$BATS_TEST_TMPDIR/mods" "$vpy" -m reexec_app ;;
		esac
		assert_success
		assert_equal "$(grep -c '^start ' <<<"$output")" 2
		assert_line "reexec=True"
		assert_line "ran to the end"
	done
}
