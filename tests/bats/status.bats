#!/usr/bin/env bats
# epollfix status (reading running processes from outside), --check PROGRAM and
# the warning before running a program the library cannot reach.

setup() {
	load helpers
	cmd=$EPOLLFIX_CMD
	server=$EPOLLFIX_PROGS/ef-server
}

# Every process a test started in the background is stopped, even on failure.
teardown() {
	stop_tracked
	[ -z "${cleanup_dir:-}" ] || rm -rf "$cleanup_dir"
}

# start OUT command...: runs the command in the background, stdout to OUT; the
# pid in $started (env and epollfix exec, so it is the program's own pid).
start() {
	local out=$1
	shift
	"$@" >"$out" 2>"$out.err" &
	started=$!
	track_pid "$started"
}

# wait_line FILE: until FILE has a first line (a server's port), 20 s at most.
wait_line() {
	local i
	for i in $(seq 200); do
		[ -s "$1" ] && head -1 "$1" && return 0
		sleep 0.1
	done
	fail "no line in $1: $(cat "$1.err" 2>/dev/null)"
}

# echo_once PORT: one line through the server and back.
echo_once() {
	local reply
	exec 5<>"/dev/tcp/127.0.0.1/$1"
	echo "hello epollfix" >&5
	read -r -t 5 reply <&5
	exec 5>&-
	[ "$reply" = "hello epollfix" ] || fail "echo on port $1 gave '$reply'"
}

# report_field PID KEY: the number after "KEY: " in `epollfix status PID`.
report_field() {
	"$cmd" status "$1" | sed -n "s/^epollfix\[$1\] $2: \([0-9]*\).*/\1/p"
}

@test "status lists a C server and an asyncio server; status PID counts grow; --json parses" {
	need_glibc # the asyncio server's python is a glibc program
	py=$(python_bin) || skip "no python3"
	state=$BATS_TEST_TMPDIR/state
	mkdir -p "$state/tmp" "$state/run"
	export TMPDIR=$state/tmp XDG_RUNTIME_DIR=$state/run HOME=$state

	start "$BATS_TEST_TMPDIR/c.out" "$cmd" "$server" --seconds 60
	c_pid=$started
	start "$BATS_TEST_TMPDIR/py.out" "$cmd" "$py" "$PROGS_SRC/asyncio_server.py" 60
	py_pid=$started
	c_port=$(wait_line "$BATS_TEST_TMPDIR/c.out")
	py_port=$(wait_line "$BATS_TEST_TMPDIR/py.out")
	echo_once "$c_port"
	echo_once "$py_port"

	run --separate-stderr "$cmd" status
	assert_success
	assert_line --index 0 --regexp '^ +PID PROGRAM +VERSION +UPGRADED +/s +CLAMPED +/s +PASSED +/s +LATE p50/p99 +EPOLL_PWAIT2$'
	assert_line --regexp "^ *$c_pid ef-server +[0-9.]+ +[1-9][0-9]* +[0-9.]+ +0 +0 +[0-9]+ +[0-9.]+ +[-0-9a-z/]+  works$"
	assert_line --regexp "^ *$py_pid python3 +[0-9.]+ +[1-9][0-9]* +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[-0-9a-z/]+  works$"

	# The full report, the exit report's lines, and counts that grow.
	run "$cmd" status "$c_pid"
	assert_success
	assert_line "epollfix[$c_pid] report: ef-server"
	assert_line --regexp "^epollfix\[$c_pid\] calls: [0-9]+ \(epoll_wait [0-9]+, epoll_pwait 0\)$"
	assert_line "epollfix[$c_pid] epoll_pwait2: available"
	assert_line --regexp "^epollfix\[$c_pid\] policy: disable=0 subms=50us "
	# Its call site, named from outside as dladdr names it inside.
	assert_line --regexp "^epollfix\[$c_pid\] site: ef-server: .* waits upgraded"
	assert_line --regexp "^epollfix\[$c_pid\] rates: upgraded [0-9.]+/s, clamped 0/s, passed [0-9.]+/s \(since the start, [0-9.]+s\)$"
	for p in "$c_pid" "$py_pid"; do
		first=$(report_field "$p" upgraded)
		sleep 0.5
		echo_once "$([ "$p" = "$c_pid" ] && echo "$c_port" || echo "$py_port")"
		second=$(report_field "$p" upgraded)
		[ -n "$first" ] && [ "$second" -gt "$first" ] || fail "pid $p: upgraded $first then $second"
	done

	# One object per line, for every process listed; the pid's own as well.
	run --separate-stderr "$cmd" status --json
	assert_success
	run python3 -c '
import json, sys
objs = [json.loads(line) for line in sys.stdin]
by_pid = {o["pid"]: o for o in objs}
for pid, prog in ((int(sys.argv[1]), "ef-server"), (int(sys.argv[2]), "python3")):
    o = by_pid[pid]
    assert o["program"] == prog, o
    assert o["epoll_pwait2"]["state"] == "works", o
    assert o["upgraded"] > 0 and o["calls"]["epoll_wait"] >= o["upgraded"], o
    assert o["policy"]["subms"] == "50us" and o["acting"] is True, o
    assert o["rates"]["since"] == "start" and o["rates"]["upgraded"] > 0, o
    assert sum(s["upgraded"] for s in o["sites"]) > 0, o
    assert prog != "ef-server" or [s["where"] for s in o["sites"]] == ["ef-server"], o
print("ok", len(objs))' "$c_pid" "$py_pid" <<<"$output"
	assert_success
	assert_output --regexp '^ok [0-9]+$'
	run "$cmd" status --json "$py_pid"
	assert_success
	python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); assert o["program"]=="python3", o' <<<"$output"

	# --watch: rates between refreshes; ends when killed.
	run timeout 2 "$cmd" status --watch=0.4s "$c_pid"
	[ "$(grep -c "^epollfix\[$c_pid\] report: ef-server" <<<"$output")" -ge 3 ] || fail "$output"
	assert_line --regexp "^epollfix\[$c_pid\] rates: upgraded [0-9.]+/s, .*\(over the last 0\.[0-9]s\)$"

	# Stopped: gone from the list, and nothing left behind.
	kill "$c_pid" "$py_pid"
	wait "$c_pid" "$py_pid" || true
	run --separate-stderr "$cmd" status
	refute_line --regexp "^ *($c_pid|$py_pid) "
	run find "$state" -mindepth 1 -not -path "$state/tmp" -not -path "$state/run"
	assert_output ""
	# Other programs on the machine use /dev/shm; nothing there is the library's.
	run ls -A /dev/shm
	refute_output --partial epollfix
}

@test "status PID: no such process, no library, another layout: one line and an exit status each" {
	run --separate-stderr "$cmd" status not-a-pid
	assert_failure 2
	true &
	gone=$!
	wait "$gone"
	run --separate-stderr "$cmd" status "$gone"
	assert_failure 3
	assert_equal "$stderr" "epollfix: status: no process $gone"

	start "$BATS_TEST_TMPDIR/sleep.out" sleep 60
	run --separate-stderr "$cmd" status "$started"
	assert_failure 5
	assert_equal "$stderr" "epollfix: status: libepollfix is not loaded in process $started (sleep)"

	# The library as another release builds it: status layout 99.
	start "$BATS_TEST_TMPDIR/l.out" env \
		LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_PROGS/libepollfix-layout99.so" "$server"
	wait_line "$BATS_TEST_TMPDIR/l.out" >/dev/null
	run --separate-stderr "$cmd" status "$started"
	assert_failure 6
	version=$("$cmd" --version | cut -d' ' -f2)
	layout=$(sed -n 's/^#define EF_LIVE_LAYOUT \([0-9]*\)$/\1/p' "$EPOLLFIX_SRC/src/common/live.h")
	assert_equal "$stderr" "epollfix: status: process $started runs libepollfix $version (status layout 99); this command is epollfix $version (status layout $layout): use the epollfix command of the library's version"
	# The list says so too, on stderr, and lists it not.
	run --separate-stderr "$cmd" status
	assert_success
	refute_line --regexp "^ *$started "
	grep -qF "process $started runs libepollfix $version (status layout 99)" <<<"$stderr" || fail "$stderr"
	[ "$(grep -c "process $started " <<<"$stderr")" = 1 ] || fail "$stderr"
}

# running_sleep PID...: until each runs sleep (past its launchers' execs).
running_sleep() {
	local p i
	for p in "$@"; do
		for i in $(seq 100); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && break; sleep 0.05; done
	done
}

# state_of PID: the library's state `epollfix status PID` gives a process
# whose LD_PRELOAD names a libepollfix it has not loaded.
state_of() {
	"$cmd" status "$1" 2>/dev/null | sed -n "s/^epollfix\[$1\] library: NOT LOADED (\([a-z_]*\)).*/\1/p"
}

@test "status: NOT LOADED's missing or not is what the process itself would find: no root-only file is told from none, a chroot's own links are followed in it" {
	command -v setpriv >/dev/null || skip_missing "no setpriv"
	local dir=$BATS_TEST_TMPDIR/rootonly
	mkdir -m 0700 "$dir"
	echo "not a library" >"$dir/libepollfix.so"
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# Behind a directory only root may search, a file and no file are the
	# same to the process: neither is told apart by root's look.
	start "$BATS_TEST_TMPDIR/a.out" "${nobody[@]}" env LD_PRELOAD="$dir/libepollfix.so" sleep 60
	local there=$started
	start "$BATS_TEST_TMPDIR/b.out" "${nobody[@]}" env LD_PRELOAD="$dir/libepollfix-none.so" sleep 60
	local none=$started
	# The process's own link to the root-only file, in a directory it owns.
	local mine
	mine=$(mktemp -d /tmp/epollfix-mine.XXXXXX)
	cleanup_dir=$mine
	chmod 0755 "$mine"
	ln -s "$dir/libepollfix.so" "$mine/libepollfix.so"
	start "$BATS_TEST_TMPDIR/c.out" "${nobody[@]}" env LD_PRELOAD="$mine/libepollfix.so" sleep 60
	local linked=$started
	# A chrooted program whose loader found the file through the chroot's own
	# absolute link (which names no file on the host): not missing.
	local jail=$BATS_TEST_TMPDIR/jail f
	mkdir -p "$jail/lib"
	for f in $(command -v sleep) $(ldd "$(command -v sleep)" | grep -o '/[^ ]*'); do
		mkdir -p "$jail$(dirname "$f")" && cp -L "$f" "$jail$f"
	done
	echo "not a library either" >"$jail/lib/epollfix-jail-only.so"
	[ ! -e /lib/epollfix-jail-only.so ] || skip "/lib/epollfix-jail-only.so exists on the host"
	ln -s /lib/epollfix-jail-only.so "$jail/lib/libepollfix.so"
	start "$BATS_TEST_TMPDIR/d.out" env LD_PRELOAD=/lib/libepollfix.so chroot "$jail" "$(command -v sleep)" 60
	local jailed=$started
	running_sleep "$there" "$none" "$linked" "$jailed"
	assert_equal "$(state_of "$there") $(state_of "$none") $(state_of "$linked")" \
		"not_loaded not_loaded not_loaded"
	assert_equal "$(state_of "$jailed")" not_loaded
	# What the process can find is still told: a file missing where it may look.
	start "$BATS_TEST_TMPDIR/e.out" "${nobody[@]}" env LD_PRELOAD="$mine/libepollfix-none.so" sleep 60
	running_sleep "$started"
	assert_equal "$(state_of "$started")" missing
}

@test "processes exiting while being read: a line and exit 3 or 5, never a crash or a number of another process" {
	for i in $(seq 40); do
		preload "$EPOLLFIX_PROGS/ef-sleep" --count 3 >/dev/null &
		p=$!
		run --separate-stderr "$cmd" status "$p"
		case "$status" in
		0) assert_line "epollfix[$p] report: ef-sleep" ;;
		3) [[ "$stderr" =~ ^"epollfix: status: "(no process $p|process $p exited while being read)$ ]] || fail "$stderr" ;;
		5) [[ "$stderr" =~ ^"epollfix: status: "(libepollfix is not loaded in process $p|libepollfix in process $p has not finished starting) ]] || fail "$stderr" ;;
		*) fail "exit $status: $stderr" ;;
		esac
		wait "$p"
	done
}

@test "another user's process: the permission line names the rule and what works" {
	[ "$(id -u)" = 0 ] || skip "needs root to read as another user (setpriv)"
	command -v setpriv >/dev/null || skip "no setpriv"
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$cmd" ||
		skip "nobody cannot run $cmd (a private directory)"
	start "$BATS_TEST_TMPDIR/c.out" "$cmd" "$server" --seconds 60
	wait_line "$BATS_TEST_TMPDIR/c.out" >/dev/null
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups "$cmd" status "$started"
	assert_failure 4
	assert_equal "$stderr" "epollfix: status: process $started belongs to root (uid 0): reading another user's process needs CAP_SYS_PTRACE; run \`sudo epollfix status $started\`"
	# Listing shows only what nobody may read: not root's server.
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups "$cmd" status
	assert_success
	refute_line --regexp "^ *$started "
	# Root may.
	run "$cmd" status "$started"
	assert_success
}

# The library's path is the process's to point anywhere: here its own mount
# namespace puts a FIFO over it. A reader without root opens it through
# /proc/PID/root (map_files needs CAP_SYS_ADMIN), never to block.
@test "status as the same user: a FIFO over the library's path in the process's own namespace is refused at once" {
	[ "$(id -u)" = 0 ] || skip "needs root to mount in the process's namespace (nsenter)"
	command -v setpriv >/dev/null && command -v nsenter >/dev/null || skip "no setpriv or nsenter"
	as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	as_nobody test -x "$cmd" || skip "nobody cannot run $cmd (a private directory)"
	as_nobody unshare -Urm true 2>/dev/null || skip "no user namespaces for nobody"
	# Under /tmp: nobody cannot reach into bats's own temporary directory.
	dir=$(mktemp -d /tmp/epollfix-status.XXXXXX)
	cleanup_dir=$dir
	cp "$EPOLLFIX_LIB" "$dir/libepollfix.so"
	mkfifo "$dir/fifo"
	chown -R nobody:nogroup "$dir"
	# setpriv, unshare and env each exec the next: $started is the server.
	start "$dir/c.out" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		unshare -Urm env LD_PRELOAD="$dir/libepollfix.so" "$server" --seconds 60
	wait_line "$dir/c.out" >/dev/null
	pid=$started
	run as_nobody "$cmd" status "$pid"
	assert_success
	nsenter -t "$pid" -m -- mount --bind "$dir/fifo" "$dir/libepollfix.so"
	run --separate-stderr timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$cmd" status "$pid"
	assert_failure 6
	assert_equal "$stderr" "epollfix: status: $dir/libepollfix.so, as process $pid sees it, is not a regular file: not read"
}

# ---- warnings: programs the library cannot reach ------------------------------

@test "--check PROGRAM and the warning before running it: a static binary, and a script run by it" {
	need_glibc # glibc's libc.a; musl's static build is tested through the same code
	printf '#include <stdio.h>\nint main(void) { puts("ran"); return 0; }\n' >"$BATS_TEST_TMPDIR/s.c"
	cc -static -o "$BATS_TEST_TMPDIR/static-hello" "$BATS_TEST_TMPDIR/s.c" 2>/dev/null ||
		skip "this toolchain cannot link statically (libc6-dev's libc.a)"
	s=$BATS_TEST_TMPDIR/static-hello
	run "$cmd" --check "$s"
	assert_failure 1
	assert_line "program:      $s is statically linked (no PT_INTERP): no dynamic loader runs, so LD_PRELOAD is ignored and libepollfix cannot act"
	# The command still runs, after one line.
	run --separate-stderr "$cmd" -- "$s"
	assert_success
	assert_output "ran"
	assert_equal "$stderr" "epollfix: warning: $s is statically linked (no PT_INTERP): no dynamic loader runs, so LD_PRELOAD is ignored and libepollfix cannot act"
	# --log=quiet silences it.
	run --separate-stderr "$cmd" --log=quiet -- "$s"
	assert_equal "$stderr" ""
	# Through PATH, as execvp finds it.
	PATH=$BATS_TEST_TMPDIR:$PATH run --separate-stderr "$cmd" static-hello
	assert_output "ran"
	[[ "$stderr" == "epollfix: warning: $s is statically linked"* ]] || fail "$stderr"

	# A script whose #! names the static program: followed one level.
	printf '#!%s\n' "$s" >"$BATS_TEST_TMPDIR/script"
	chmod +x "$BATS_TEST_TMPDIR/script"
	run "$cmd" --check "$BATS_TEST_TMPDIR/script"
	assert_failure 1
	assert_line "program:      $BATS_TEST_TMPDIR/script, a script run by $s, which is statically linked (no PT_INTERP): no dynamic loader runs, so LD_PRELOAD is ignored and libepollfix cannot act"
	run --separate-stderr "$cmd" "$BATS_TEST_TMPDIR/script"
	assert_output "ran"
	[[ "$stderr" == "epollfix: warning: $BATS_TEST_TMPDIR/script, a script run by $s, which is statically linked"* ]] || fail "$stderr"
	# Through env as well.
	printf '#!/usr/bin/env static-hello\n' >"$BATS_TEST_TMPDIR/script2"
	chmod +x "$BATS_TEST_TMPDIR/script2"
	PATH=$BATS_TEST_TMPDIR:$PATH run "$cmd" --check "$BATS_TEST_TMPDIR/script2"
	assert_line "program:      $BATS_TEST_TMPDIR/script2, a script run by $s, which is statically linked (no PT_INTERP): no dynamic loader runs, so LD_PRELOAD is ignored and libepollfix cannot act"
}

@test "--check PROGRAM: a dynamic program passes; a missing one is named" {
	run "$cmd" --check "$server"
	assert_success
	assert_line "program:      $server: the dynamic loader will preload libepollfix"
	run "$cmd" --check no-such-program-here
	assert_failure 1
	assert_line "program:      no-such-program-here: not found in PATH"
	run --separate-stderr "$cmd" "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	assert_equal "$stderr" ""
}

@test "--check PROGRAM: a setuid copy owned by another user" {
	[ "$(id -u)" = 0 ] || skip "needs root to give a copy to another user"
	# A program of its own (not one built with the sanitizers, which refuse setuid).
	printf '#include <sys/epoll.h>\nint main(void) { struct epoll_event e; return epoll_wait(epoll_create1(0), &e, 1, 0); }\n' \
		>"$BATS_TEST_TMPDIR/calls.c"
	# For the libc the library under test is built for.
	local cc=cc
	[ "$EPOLLFIX_LIBC" = musl ] && cc=musl-gcc
	"$cc" -o "$BATS_TEST_TMPDIR/suid-calls" "$BATS_TEST_TMPDIR/calls.c" || skip "no $cc"
	# Without the setuid bit the library reports its call: the check below means something.
	run --separate-stderr "$cmd" --stats "$BATS_TEST_TMPDIR/suid-calls"
	grep -q "report: suid-calls" <<<"$stderr" || fail "no report even without setuid: $stderr"
	chown nobody "$BATS_TEST_TMPDIR/suid-calls"
	chmod 4755 "$BATS_TEST_TMPDIR/suid-calls"
	run "$cmd" --check "$BATS_TEST_TMPDIR/suid-calls"
	assert_failure 1
	assert_line "program:      $BATS_TEST_TMPDIR/suid-calls is setuid nobody: it runs in secure-execution mode, where the loader ignores LD_PRELOAD's path to libepollfix, so the library cannot act"
	# It runs, with the warning, and indeed without the library: no report.
	run --separate-stderr "$cmd" --stats "$BATS_TEST_TMPDIR/suid-calls"
	assert_success
	[[ "$stderr" == "epollfix: warning: $BATS_TEST_TMPDIR/suid-calls is setuid nobody: "* ]] || fail "$stderr"
	! grep -q 'report:' <<<"$stderr" || fail "the library acted: $stderr"
	# A host whose /etc/ld.so.preload names the library (in a mount namespace of
	# its own: the machine's /etc is not touched): loaded, with the system file only.
	if command -v unshare >/dev/null; then
		etc=$BATS_TEST_TMPDIR/etc
		mkdir "$etc"
		# A file another test's package install removes meanwhile
		# (packaging.bats: /etc/epollfix.conf.dpkg-new) is no failure.
		cp -a /etc/. "$etc"/ 2>"$BATS_TEST_TMPDIR/cp.err" ||
			! grep -v ": No such file or directory$" "$BATS_TEST_TMPDIR/cp.err" | grep -q . ||
			fail "copy of /etc: $(cat "$BATS_TEST_TMPDIR/cp.err")"
		echo "$EPOLLFIX_LIB" >"$etc/ld.so.preload"
		run unshare -m sh -c 'mount --bind "$1" /etc && exec "$2" --check "$3"' sh "$etc" "$cmd" \
			"$BATS_TEST_TMPDIR/suid-calls"
		assert_failure 1
		assert_line "program:      $BATS_TEST_TMPDIR/suid-calls is setuid nobody: it runs in secure-execution mode, where the loader ignores LD_PRELOAD, but /etc/ld.so.preload loads libepollfix, with the system file's settings only (secure execution ignores EPOLLFIX_* variables, so epollfix's options too)"
	fi
	# Setgid to another group: the same.
	chown root:nogroup "$BATS_TEST_TMPDIR/suid-calls"
	chmod 2755 "$BATS_TEST_TMPDIR/suid-calls"
	run "$cmd" --check "$BATS_TEST_TMPDIR/suid-calls"
	assert_failure 1
	assert_line --regexp "is setgid nogroup: it runs in secure-execution mode"
}

# go_build DIR OUT [env...]: builds the Go program in DIR, offline.
go_build() {
	local dir=$1 out=$2
	shift 2
	command -v go >/dev/null || skip "no go: the Go checks need a Go toolchain"
	(cd "$dir" && env GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off GOCACHE="${GOCACHE:-$BATS_FILE_TMPDIR/gocache}" \
		"$@" go build -o "$out" .) 2>"$out.log" || skip "go build failed: $(head -3 "$out.log")"
}

@test "--check PROGRAM: a Go program, static and with cgo" {
	need_glibc # cgo links against the system's glibc
	mkdir -p "$BATS_TEST_TMPDIR/gohello"
	printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("ran") }\n' >"$BATS_TEST_TMPDIR/gohello/main.go"
	printf 'module epollfix.test/gohello\n\ngo 1.18\n' >"$BATS_TEST_TMPDIR/gohello/go.mod"
	go_build "$BATS_TEST_TMPDIR/gohello" "$BATS_TEST_TMPDIR/go-static" CGO_ENABLED=0
	# Without the supervisor, what the preload alone can do.
	run "$cmd" --go=off --check "$BATS_TEST_TMPDIR/go-static"
	assert_failure 1
	assert_line "program:      $BATS_TEST_TMPDIR/go-static is a statically linked Go program: no dynamic loader runs, so LD_PRELOAD is ignored, and Go's runtime waits with raw system calls anyway; Go's own timer precision needs Go's epoll_pwait2 support"
	run --separate-stderr "$cmd" --go=off "$BATS_TEST_TMPDIR/go-static"
	assert_output "ran"
	[[ "$stderr" == "epollfix: warning: $BATS_TEST_TMPDIR/go-static is a statically linked Go program"* ]] || fail "$stderr"
	# With it (the default), the runtime's own timers are reached: no warning.
	run "$cmd" --check "$BATS_TEST_TMPDIR/go-static"
	assert_line --regexp "^program:      $BATS_TEST_TMPDIR/go-static is a Go program \(go1\.[0-9.]+\): runtime layout checked: supervised "
	run --separate-stderr "$cmd" "$BATS_TEST_TMPDIR/go-static"
	assert_success
	assert_output "ran"
	[ -z "$stderr" ] || fail "$stderr"

	go_build "$PROGS_SRC/cgo_busy" "$BATS_TEST_TMPDIR/go-cgo" CGO_ENABLED=1
	run "$cmd" --go=off --check "$BATS_TEST_TMPDIR/go-cgo"
	assert_failure 1
	assert_line "program:      $BATS_TEST_TMPDIR/go-cgo is a Go program: Go's runtime waits with raw system calls, which libepollfix cannot reach; only its C code (cgo libraries) is reached, such as a C library's busy loop under --clamp; Go's own timer precision needs Go's epoll_pwait2 support"
	run "$cmd" --check "$BATS_TEST_TMPDIR/go-cgo"
	assert_line --regexp "go-cgo is a Go program \(go1\.[0-9.]+\): runtime layout checked: supervised "
	# Stripped (no .symtab), still known by its sections and notes, and its
	# runtime's addresses read from its code.
	strip -o "$BATS_TEST_TMPDIR/go-cgo-stripped" "$BATS_TEST_TMPDIR/go-cgo"
	run "$cmd" --check "$BATS_TEST_TMPDIR/go-cgo-stripped"
	assert_line --regexp "go-cgo-stripped is a Go program \(go1\.[0-9.]+\): stripped: runtime layout checked, addresses from .gopclntab and the runtime's code: supervised "
}

@test "a cgo program spinning on epoll_wait(..., 0): --clamp=1ms cuts its CPU 10x; status shows the clamped polls" {
	need_glibc
	go_build "$PROGS_SRC/cgo_busy" "$BATS_TEST_TMPDIR/cgo-busy" CGO_ENABLED=1
	run "$BATS_TEST_TMPDIR/cgo-busy" 1.5
	assert_success
	free=$(field cpu_permille)
	start "$BATS_TEST_TMPDIR/clamped.out" "$cmd" --clamp=1ms "$BATS_TEST_TMPDIR/cgo-busy" 3
	sleep 1.5
	run "$cmd" status "$started"
	assert_success
	# Both that serve it: the supervisor (the runtime's waits), the library
	# (its C code's).
	assert_line --regexp "^epollfix\[[0-9]+\] Go supervisor of pid $started: "
	polls=$(sed -n "s/^epollfix\[$started\] clamped: //p" <<<"$output")
	[ "${polls:-0}" -gt 100 ] || fail "clamped polls: '$polls' in: $output"
	run --separate-stderr "$cmd" status
	assert_line --regexp "^ *$started cgo-busy +[0-9.]+ +0 +[0-9.]+ +[1-9][0-9]* "
	wait "$started"
	clamped=$(sed -n 's/.*cpu_permille=\([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/clamped.out")
	[ -n "$clamped" ] || fail "no figure: $(cat "$BATS_TEST_TMPDIR/clamped.out"*)"
	# At least 10x less CPU, in thousandths of a core (a 0 counts as 1).
	[ $(( (clamped > 0 ? clamped : 1) * 10 )) -le "$free" ] ||
		fail "cpu ${free}/1000 free, ${clamped}/1000 clamped (load: $(cut -d' ' -f1-3 /proc/loadavg))"
}

@test "status reads a library stripped as packages strip it, and one deleted since it was loaded" {
	command -v strip >/dev/null || skip "no strip (binutils)"
	lib=$BATS_TEST_TMPDIR/libepollfix.so
	# dh_strip's command for shared libraries: .symtab goes, section headers stay.
	strip --remove-section=.comment --remove-section=.note --strip-unneeded -o "$lib" "$EPOLLFIX_LIB"
	! readelf -S "$lib" | grep -q '\.symtab' || fail "strip kept .symtab"
	start "$BATS_TEST_TMPDIR/c.out" env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$lib" "$server"
	wait_line "$BATS_TEST_TMPDIR/c.out" >/dev/null
	run "$cmd" status "$started"
	assert_success
	assert_line "epollfix[$started] report: ef-server"
	assert_line --regexp "^epollfix\[$started\] library: [0-9.]+ $lib \(build [0-9a-f]{40}\)$"
	# Replaced on disk (as a package upgrade does): the mapped copy is read
	# through /proc/PID/map_files, which needs root; others get a line.
	rm "$lib"
	if [ "$(id -u)" = 0 ]; then
		run "$cmd" status "$started"
		assert_success
		assert_line "epollfix[$started] report: ef-server"
		assert_line --regexp "^epollfix\[$started\] library: [0-9.]+ $lib \(deleted\) \(build [0-9a-f]{40}\)$"
	else
		run --separate-stderr "$cmd" status "$started"
		assert_failure 6
		assert_equal "$stderr" "epollfix: status: $lib (deleted), loaded in process $started, was replaced or deleted on disk; reading the copy the process loaded (/proc/$started/map_files) needs root"
	fi
}

@test "status PID and the exit report: the same formatter, the same lines, the same call sites" {
	start "$BATS_TEST_TMPDIR/c.out" "$cmd" --stats="$BATS_TEST_TMPDIR/report" "$server" --seconds 2
	wait_line "$BATS_TEST_TMPDIR/c.out" >/dev/null
	sleep 0.5
	run "$cmd" status "$started"
	assert_success
	live=$output
	wait "$started"
	# Every line the exit report has, status had, with only the numbers apart;
	# a call site's line by its place alone: what the site is shown to be may
	# change in the 1.5 s between the two (a stream that never ended until a
	# busy machine cut it is then shown as runs that end).
	keys() {
		sed -n -e 's/^epollfix\[[0-9]*\] \(site: [^:]*:\).*/\1/p' \
			-e 's/^epollfix\[[0-9]*\] \([^:]*: [^0-9]*\).*/\1/p' | sort
	}
	assert_equal "$(keys <"$BATS_TEST_TMPDIR/report")" "$(grep -v -e '] library: ' -e '] rates: ' -e '] container: ' <<<"$live" | keys)"
	assert_equal "$(grep -c '] site: ' "$BATS_TEST_TMPDIR/report")" "$(grep -c '] site: ' <<<"$live")"
	grep -q "] site: ef-server: " "$BATS_TEST_TMPDIR/report" || fail "$(cat "$BATS_TEST_TMPDIR/report")"
}

@test "status --json: a program name that is not UTF-8, or holds quotes, still gives valid JSON" {
	odd=$BATS_TEST_TMPDIR/$'a"b\\c\xff\xe9d'
	cp "$server" "$odd"
	start "$BATS_TEST_TMPDIR/c.out" "$cmd" "$odd"
	wait_line "$BATS_TEST_TMPDIR/c.out" >/dev/null
	run "$cmd" status --json "$started"
	assert_success
	run python3 -c 'import json, sys; o = json.loads(sys.stdin.buffer.read().decode("utf-8")); print(ascii(o["program"]))' <<<"$output"
	assert_success
	assert_output "'a\"b\\\\c\\ufffd\\ufffdd'"
}

# ---- another process's data is hostile ----------------------------------------

# no_terminal_controls: $output holds no control character but newline and tab.
no_terminal_controls() {
	if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$output"; then
		fail "control characters reach the terminal: $(cat -v <<<"$output" | head -5)"
	fi
}

@test "status: a process named with escape sequences shows them escaped, in every text output" {
	name=$'\e]0;owned\a\e[8m'
	start "$BATS_TEST_TMPDIR/h" env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-hostile" "$name"
	wait_line "$BATS_TEST_TMPDIR/h" >/dev/null
	run "$cmd" status
	assert_success
	no_terminal_controls
	# The column stays a column: the PROGRAM field is 15 characters wide, the
	# escape that does not fit is cut whole, and '~' says so.
	line=$(grep "^ *$started " <<<"$output")
	[ "$(cut -c9-24 <<<"$line")" = "$(printf '%-15s ' '\x1b]0;owned~')" ] || fail "the columns moved: $line"
	run "$cmd" status "$started"
	assert_success
	no_terminal_controls
	assert_output --partial "] report: \\x1b]0;owned\\x07\\x1b[8m"
	run timeout 2 "$cmd" status --watch=0.4s
	no_terminal_controls
	run --separate-stderr "$cmd" status --json "$started"
	assert_success
	python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); assert d["program"] == sys.argv[1], d["program"]' "$name" <<<"$output"
	# A process without the library: the error line names it escaped too.
	start "$BATS_TEST_TMPDIR/n" "$EPOLLFIX_PROGS/ef-hostile" "$name"
	wait_line "$BATS_TEST_TMPDIR/n" >/dev/null
	run "$cmd" status "$started"
	assert_failure 5
	no_terminal_controls
	assert_output "epollfix: status: libepollfix is not loaded in process $started (\\x1b]0;owned\\x07\\x1b[8m)"
}

@test "status: a library path with escape sequences is shown escaped" {
	dir="$BATS_TEST_TMPDIR/"$'\e[31mred'
	mkdir -p "$dir"
	cp "$EPOLLFIX_LIB" "$dir/libepollfix.so"
	start "$BATS_TEST_TMPDIR/h" env LD_PRELOAD="$dir/libepollfix.so" "$EPOLLFIX_PROGS/ef-hostile" plain
	wait_line "$BATS_TEST_TMPDIR/h" >/dev/null
	run "$cmd" status "$started"
	assert_success
	no_terminal_controls
	assert_output --partial '\x1b[31mred/libepollfix.so'
}

@test "status: a call site in a file whose .dynsym claims a gigabyte is read in bounded time" {
	cp "$EPOLLFIX_PROGS/libef-late-plain.so" "$BATS_TEST_TMPDIR/libspoilt.so"
	start "$BATS_TEST_TMPDIR/h" env LD_PRELOAD="$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-hostile" spoilt "$BATS_TEST_TMPDIR/libspoilt.so"
	wait_line "$BATS_TEST_TMPDIR/h" >/dev/null
	# Before, one pread a symbol: 44 million of them, 16 s on this VM.
	run timeout 5 "$cmd" status "$started"
	assert_success
	assert_output --partial "site: libspoilt.so"
	run timeout 5 "$cmd" status --json "$started"
	assert_success
}

@test "status 0, a negative or a malformed pid is a usage error, not every process" {
	for pid in 0 -1 1x 00; do
		run --separate-stderr "$cmd" status "$pid"
		assert_failure 2
		[ -z "$output" ] || fail "status $pid printed: $output"
	done
}
