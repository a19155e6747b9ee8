#!/usr/bin/env bats
# The epollfix command, per-program policy and installation.

setup() {
	load helpers
	cmd=$EPOLLFIX_CMD
	count_lib=$EPOLLFIX_PROGS/libcountcalls.so
}

@test "epollfix CMD: upgrades the command's waits; without it they stay 1ms" {
	run "$cmd" "$EPOLLFIX_PROGS/ef-sleep" --count 100
	assert_success
	assert_upgraded
	run "$EPOLLFIX_PROGS/ef-sleep" --count 50
	assert_rounded
}

@test "--help lists every variable; --version prints the version" {
	run "$cmd" --help
	assert_success
	for v in SUBMS MAX_MS SLACK LOG CLAMP CLAMP_AFTER CLAMP_GAP ADAPT DISABLE STATS ONLY SKIP; do
		assert_output --partial "[EPOLLFIX_$v"
	done
	version=$(project_version)
	run "$cmd" --version
	assert_success
	assert_output "epollfix $version"
}

@test "the version is meson.build's wherever a tool cannot read it from there: Debian changelog, chart, docs" {
	local version src=$EPOLLFIX_SRC
	version=$(project_version)
	# debian/rules also stops a package build whose changelog says another.
	assert_equal "$(sed -n '1s/^epollfix (\([^)]*\)).*/\1/p' "$src/debian/changelog")" "$version"
	local chart=$src/deploy/helm/epollfix
	assert_equal "$(sed -n 's/^version: *//p' "$chart/Chart.yaml")" "$version"
	assert_equal "$(sed -n 's/^appVersion: *"\(.*\)"$/\1/p' "$chart/Chart.yaml")" "$version"
	# The image's tag is none of its own: the template falls back to appVersion.
	assert_equal "$(sed -n '/^image:/,/^[^ ]/s/^  tag: *//p' "$chart/values.yaml")" '""'
	grep -q 'Values.image.tag | default .Chart.AppVersion' "$chart/templates/_helpers.tpl" ||
		fail "the image tag does not default to appVersion"
	# The wheel's: meson-python reads it from meson.build.
	grep -q '^dynamic = \["version"\]$' "$src/pyproject.toml" || fail "pyproject.toml: no dynamic version"
	run grep -n '^version *=' "$src/pyproject.toml"
	assert_failure
	# What a user copies from the docs: image tags, the wheel's name, the
	# annotation the policy sets, the library's version as epollfix status shows it.
	run bash -c 'cd "$1" && grep -noE "epollfix:[0-9]+\.[0-9]+\.[0-9]+|epollfix-[0-9]+\.[0-9]+\.[0-9]+-|injected: \"[0-9.]+\"|library: [0-9]+\.[0-9]+\.[0-9]+ |\"version\":\"[0-9.]+\"" README.md doc/*.md' _ "$src"
	assert_success
	local file n match
	while IFS=: read -r file n match; do
		[ "$(grep -oE '[0-9]+(\.[0-9]+)+' <<<"$match")" = "$version" ] || fail "$file:$n: $match, not $version"
	done <<<"$output"
}

@test "the docs show the library where it is installed, never a build tree's absolute path" {
	# An example taken from a developer's checkout shows its path
	# (/home/..., /srv/src/epollfix/build/src/libepollfix.so) where a user's
	# system has /usr/lib/<multiarch>/libepollfix.so or /usr/local/lib/...;
	# a path relative to the checkout ($PWD/build/...) is what a user types.
	run bash -c 'cd "$1" && grep -nE "(^|[^A-Za-z0-9_}\$])/[^ \"]*/build(-[a-z]+)?/(src|doc|python)/|/home/[a-z]" README.md doc/*.md doc/*.in src/README.md python/README.md' _ "$EPOLLFIX_SRC"
	assert_failure 1
}

@test "every option reaches the library as its variable" {
	# The library's own report prints the policy it runs with.
	run --separate-stderr "$cmd" --subms=20us --max-ms 3 --slack=keep --log=warn --clamp=2ms \
		--clamp-after=5 --clamp-gap=3us --adapt=auto --seccomp=trust --stats -- "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	assert_equal "$(grep ' policy: ' <<<"$stderr" | sed 's/.*policy: //')" \
		"disable=0 subms=20us max-ms=3 slack=keep log=warn clamp=2ms clamp-after=5 clamp-gap=3us adapt=auto max-extra=1000 seccomp=trust go=auto"
	run "$cmd" --off "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_rounded
	run "$cmd" --disable=1 "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_rounded
	run "$cmd" --clamp=1ms "$EPOLLFIX_PROGS/ef-busy" --seconds 0.5
	[ "$(field cpu_pct)" -lt 10 ] || fail "$output"
}

@test "--stats=FILE writes the report there, %p expanded" {
	dir=$(mktemp -d)
	run "$cmd" --stats="$dir/r.%p" "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	run cat "$dir"/r.*
	assert_output --regexp "calls: 135 \(epoll_wait 135, epoll_pwait 0\)"
	rm -rf "$dir"
}

@test "bad option values: the library's parser refuses them, exit 2, nothing runs" {
	run --separate-stderr "$cmd" --subms=abc touch "$BATS_TEST_TMPDIR/ran"
	assert_failure 2
	assert_equal "$stderr" "epollfix: --subms: EPOLLFIX_SUBMS='abc' is not a duration (like 50us)"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ] || fail "the command ran"
	run --separate-stderr "$cmd" --max-ms=0 true
	assert_failure 2
	assert_equal "$stderr" "epollfix: --max-ms: EPOLLFIX_MAX_MS='0' is out of range (1 to 1000)"
	run --separate-stderr "$cmd" --log=loud true
	assert_failure 2
	assert_equal "$stderr" "epollfix: --log: EPOLLFIX_LOG='loud' is not one of quiet, warn, debug"
	run --separate-stderr "$cmd" --subms true
	assert_failure 2
	run --separate-stderr "$cmd" --frobnicate true
	assert_failure 2
	assert_equal "$stderr" "epollfix: unknown option --frobnicate (see epollfix --help)"
	run --separate-stderr "$cmd" --only=a --skip=b true
	assert_failure 2
	assert_equal "$stderr" "epollfix: EPOLLFIX_ONLY and EPOLLFIX_SKIP cannot both be set"
	run --separate-stderr "$cmd"
	assert_failure 2
	assert_output ""
}

@test "missing command exits 127, non-executable 126, like a shell" {
	run -127 --separate-stderr "$cmd" no-such-command-here
	assert_equal "$stderr" "epollfix: no-such-command-here: command not found"
	touch "$BATS_TEST_TMPDIR/plain"
	run -126 --separate-stderr "$cmd" "$BATS_TEST_TMPDIR/plain"
	assert_equal "$stderr" "epollfix: $BATS_TEST_TMPDIR/plain: Permission denied"
}

@test "the command's exit status is passed through" {
	run "$cmd" "$EPOLLFIX_PROGS/ef-sleep" --no-such-flag
	assert_failure 2
	run "$cmd" "$EPOLLFIX_PROGS/ef-calls" --zero 1
	assert_success
}

@test "an existing LD_PRELOAD is kept: both libraries load and both work, either order" {
	# epollfix prepended: it upgrades, and the other interposer still sees the
	# calls epollfix passes on (none here but its own probe's neighbours).
	run --separate-stderr env LD_PRELOAD="$count_lib" "$cmd" "$EPOLLFIX_PROGS/ef-calls"
	assert_success
	assert_equal "$(grep -c '^countcalls: epoll_wait [0-9]*$' <<<"$stderr")" 1
	run env LD_PRELOAD="$count_lib" "$cmd" "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_upgraded
	# The other order, by hand: the other library first sees every call.
	run --separate-stderr env LD_PRELOAD="$count_lib:$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-calls" \
		--zero 10 --one 5 --ready 3 --long 2
	assert_success
	assert_equal "$(sed -n 's/^countcalls: epoll_wait //p' <<<"$stderr")" 20
	run env LD_PRELOAD="$count_lib:$EPOLLFIX_LIB" "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_upgraded
}

@test "LD_PRELOAD as the command leaves it: the library in front, the old entry kept, no duplicate" {
	need_glibc # the shell that prints it is a glibc program
	run env LD_PRELOAD="$count_lib" "$cmd" sh -c 'echo "$LD_PRELOAD"'
	assert_output --regexp "^/.*libepollfix\.so:$count_lib\$"
	run env LD_PRELOAD="$EPOLLFIX_LIB" "$cmd" sh -c 'echo "$LD_PRELOAD"'
	assert_output "$EPOLLFIX_LIB"
}

@test "ONLY and SKIP: two programs from one script, only the named one changed" {
	need_glibc # the script's shell is a glibc program
	other=$BATS_TEST_TMPDIR/other-sleeper
	cp "$EPOLLFIX_PROGS/ef-sleep" "$other"
	script=$BATS_TEST_TMPDIR/both.sh
	printf '#!/bin/sh\n"%s" --count 60 | sed "s/^/sleep /"\n"%s" --count 60 | sed "s/^/other /"\n' \
		"$EPOLLFIX_PROGS/ef-sleep" "$other" >"$script"
	chmod +x "$script"
	# A program left alone waits 1 ms or more every time; a changed one's
	# shortest wait ends sooner (load lengthens waits, never shortens one).
	min_of() { sed -n "s/^$1 .*min_us=\([0-9]*\).*/\1/p" <<<"$output"; }

	run "$cmd" --only=ef-sleep "$script"
	assert_success
	[ "$(min_of sleep)" -lt "$ROUNDED_US" ] || fail "$output"
	[ "$(min_of other)" -gt "$ROUNDED_US" ] || fail "$output"

	run "$cmd" --skip=ef-sleep,nothing-else "$script"
	assert_success
	[ "$(min_of sleep)" -gt "$ROUNDED_US" ] || fail "$output"
	[ "$(min_of other)" -lt "$ROUNDED_US" ] || fail "$output"

	# Through the variables too, and a skipped program writes no report.
	run --separate-stderr env EPOLLFIX_SKIP=other-sleeper EPOLLFIX_STATS=1 "$cmd" "$script"
	assert_success
	assert_equal "$(grep -c ' report: ' <<<"$stderr")" 1
	assert_equal "$(grep ' report: ' <<<"$stderr" | sed 's/.*report: //')" ef-sleep
}

@test "EPOLLFIX_ONLY and EPOLLFIX_SKIP both set in the environment: warning, program left alone" {
	run --separate-stderr preload EPOLLFIX_ONLY=ef-sleep EPOLLFIX_SKIP=x "$EPOLLFIX_PROGS/ef-sleep" --count 40
	assert_success
	assert_equal "$stderr" "epollfix: EPOLLFIX_ONLY='ef-sleep' and EPOLLFIX_SKIP='x' are both set; using neither and leaving this program alone"
	assert_rounded
}

@test "--check says whether epoll_pwait2 works, under each seccomp answer, as the report does" {
	run "$cmd" --check --subms=20us
	assert_success
	assert_line "epoll_pwait2: works"
	assert_line --regexp "^library: +$EPOLLFIX_LIB\$"
	assert_line --regexp "^policy: +disable=0 subms=20us max-ms=1 "
	# A filter from the launcher: its content cannot be read, so outside a
	# container the library leaves epoll_pwait2 alone whatever it says, unless
	# told to probe or to trust it.
	for how in eperm enosys kill; do
		run "$EPOLLFIX_PROGS/ef-filter" "$how" "$cmd" --check
		assert_failure 1
		assert_line "epoll_pwait2: no: an unknown seccomp filter was in force at start, outside a container; EPOLLFIX_SECCOMP=probe asks a child"
		run "$EPOLLFIX_PROGS/ef-filter" "$how" "$cmd" --check --seccomp=safe
		assert_failure 1
		assert_line "epoll_pwait2: no: a seccomp filter of unknown content was in force at start; EPOLLFIX_SECCOMP=probe would ask a child"
	done
	run "$EPOLLFIX_PROGS/ef-filter" eperm "$cmd" --check --seccomp=probe
	assert_failure 1
	assert_line "epoll_pwait2: no: EPERM: refused by a seccomp filter"
	run "$EPOLLFIX_PROGS/ef-sandbox" allow exec "$cmd" --check --seccomp=probe
	assert_success
	assert_line "epoll_pwait2: works"
	run "$EPOLLFIX_PROGS/ef-filter" eperm "$cmd" --check --seccomp=trust
	assert_failure 1
	assert_line "epoll_pwait2: no: EPERM: refused by a seccomp filter"
	run "$EPOLLFIX_PROGS/ef-filter" enosys "$cmd" --check --seccomp=trust
	assert_failure 1
	assert_line "epoll_pwait2: no: ENOSYS: kernel before 5.11 or a filter"
	# The command probes in a child: a kill filter ends the child, not --check.
	run "$EPOLLFIX_PROGS/ef-filter" kill "$cmd" --check --seccomp=trust
	assert_failure 1
	assert_line --regexp "^epoll_pwait2: no: a probe was killed by signal (9|31)"
}

# install_tree: meson install into $BATS_TEST_TMPDIR/root, which $root names.
install_tree() {
	root=$BATS_TEST_TMPDIR/root
	run meson install -C "$EPOLLFIX_BUILD" --no-rebuild --destdir "$root"
	assert_success
}

@test "meson install --destdir: the installed command finds the installed library; header and man page carry the version" {
	command -v meson >/dev/null || skip "no meson"
	install_tree
	bin=$(find "$root" -path '*/bin/epollfix')
	lib=$(find "$root" -name libepollfix.so)
	[ -x "$bin" ] && [ -f "$lib" ] || fail "installed: $(find "$root" -type f)"
	[ -f "$(find "$root" -path '*/include/epollfix.h')" ] || fail "no header"
	man=$(find "$root" -path '*/man1/epollfix.1')
	[ -f "$man" ] || fail "no man page"
	version=$(project_version)
	grep -q "^\.TH EPOLLFIX 1 .*\"epollfix $version\"" "$man" || fail "man page: $(sed -n 1p "$man")"
	# The installed header compiles on its own (it includes the version header
	# meson generates and installs beside it) and gives project()'s version.
	header=$(find "$root" -path '*/include/epollfix.h')
	cat >"$BATS_TEST_TMPDIR/version.c" <<-'EOF'
		#include <epollfix.h>
		#include <stdio.h>
		int main(void)
		{
			printf("%s %d.%d.%d\n", EPOLLFIX_VERSION, EPOLLFIX_VERSION_MAJOR,
			       EPOLLFIX_VERSION_MINOR, EPOLLFIX_VERSION_PATCH);
			return 0;
		}
	EOF
	run cc -Wall -Werror -I"$(dirname "$header")" -o "$BATS_TEST_TMPDIR/version" "$BATS_TEST_TMPDIR/version.c"
	assert_success
	run "$BATS_TEST_TMPDIR/version"
	assert_output "$version $version"
	run "$bin" --check
	assert_line "library:      $(realpath "$lib")"
	run "$bin" "$EPOLLFIX_PROGS/ef-sleep" --count 60
	assert_success
	assert_upgraded
}

@test "meson install keeps an edited configuration file, and installs one where none is" {
	command -v meson >/dev/null || skip "no meson"
	install_tree
	conf=$(find "$root" -name epollfix.conf)
	[ -f "$conf" ] || fail "no configuration file installed: $(find "$root" -type f)"
	cmp "$conf" "$EPOLLFIX_BUILD/doc/epollfix.conf" || fail "not the commented example"
	echo 'subms = 20us # edited' >>"$conf"
	install_tree
	[ "$(tail -n 1 "$conf")" = 'subms = 20us # edited' ] || fail "overwritten: $(tail -n 3 "$conf")"
}

@test "epollfix.conf(5) is installed and documents every setting of the sample file" {
	command -v meson >/dev/null || skip "no meson"
	install_tree
	page=$(find "$root" -path '*/man5/epollfix.conf.5')
	[ -f "$page" ] || fail "no epollfix.conf(5)"
	grep -q "^\.TH EPOLLFIX.CONF 5 .*\"epollfix $(project_version)\"" "$page" || fail "$(sed -n 2p "$page")"
	keys=$(sed -n 's/^# *\([a-z-]*\) *=.*/\1/p' "$EPOLLFIX_BUILD/doc/epollfix.conf")
	[ -n "$keys" ] || fail "no settings in the sample file"
	for k in $keys; do
		grep -q "^\\\\fB$(sed 's/-/\\\\-/g' <<<"$k")\\\\fR = " "$page" || fail "no entry for $k in $page"
	done
}

@test "the README's configuration table and the generated man page name every variable" {
	run "$cmd" --help
	vars=$(grep -o '\[EPOLLFIX_[A-Z_]*' <<<"$output" | tr -d '[' | sort -u)
	for v in $vars; do
		grep -q "$v" "$EPOLLFIX_SRC/README.md" || fail "README.md does not mention $v"
		grep -q "${v//_/\\\\_}\|$v" "$EPOLLFIX_BUILD/doc/epollfix.1" || fail "epollfix.1 does not mention $v"
	done
}

# sysconf_of BUILD: the system file that build's library reads (its compiler's
# EF_SYSCONF_FILE, as meson passed it).
sysconf_of() {
	grep -o 'EF_SYSCONF_FILE=\\"[^\\]*' "$1/compile_commands.json" | head -1 | sed 's/.*=\\"//'
}

@test "--check names the configuration file of the library it would preload, whichever build the command is: the image's musl command beside a glibc library" {
	local glibc=$EPOLLFIX_SRC/build musl=$EPOLLFIX_SRC/build-musl
	# The pair scripts/build makes, tested once, from build/'s suite (the
	# sanitizers' run before it exists).
	[ "$(realpath "$EPOLLFIX_BUILD")" = "$(realpath "$glibc")" ] ||
		skip "the glibc and musl builds' pair is tried from build/'s suite"
	[ -x "$musl/src/epollfix" ] && [ -f "$glibc/src/libepollfix.so" ] ||
		skip_missing "needs both the glibc and the musl build"
	local want_glibc want_musl img=$BATS_TEST_TMPDIR/img
	want_glibc=$(sysconf_of "$glibc") want_musl=$(sysconf_of "$musl")
	[ -n "$want_glibc" ] && [ "$want_glibc" != "$want_musl" ] || skip "both builds read $want_glibc"
	# The image's tree (deploy/image): the command in bin/, each libc's library.
	mkdir -p "$img/bin" "$img/glibc" "$img/musl"
	cp "$musl/src/epollfix" "$img/bin/"
	cp "$glibc/src/libepollfix.so" "$img/glibc/"
	cp "$musl/src/libepollfix.so" "$img/musl/"
	run env -u EPOLLFIX_CONFIG "$img/bin/epollfix" --check "$glibc/tests/progs/ef-sleep"
	assert_line "library:      $img/glibc/libepollfix.so"
	assert_line --regexp "^config file:  $want_glibc \((none|read|ignored)\)$"
	run env -u EPOLLFIX_CONFIG "$img/bin/epollfix" --check "$musl/tests/progs/ef-sleep"
	assert_line "library:      $img/musl/libepollfix.so"
	assert_line --regexp "^config file:  $want_musl \((none|read|ignored)\)$"
	# EPOLLFIX_CONFIG still names the file for every build.
	run env EPOLLFIX_CONFIG=/nonexistent/epollfix.conf "$img/bin/epollfix" --check "$glibc/tests/progs/ef-sleep"
	assert_line "config file:  /nonexistent/epollfix.conf (none)"
}

@test "a library that cannot be found: the command exits 2 and names each path it tried and why, the image's tree included" {
	need_glibc # the program is the build's, taken as a glibc program
	local img=$BATS_TEST_TMPDIR/img
	# The image's tree with its glibc library missing: a glibc program is
	# refused, and the message says where the library should have been.
	mkdir -p "$img/bin" "$img/musl"
	cp "$EPOLLFIX_BUILD/src/epollfix" "$img/bin/"
	cp "$EPOLLFIX_BUILD/src/libepollfix.so" "$img/musl/"
	run "$img/bin/epollfix" "$EPOLLFIX_BUILD/tests/progs/ef-sleep" --count 1
	[ "$status" = 2 ] || fail "exit $status: $output"
	assert_line "epollfix: cannot find libepollfix.so; tried:"
	assert_line "  $img/bin/libepollfix.so: No such file or directory"
	assert_line "  $img/glibc/libepollfix.so: No such file or directory"
	# The musl library it did not take is not named.
	refute_output --partial "$img/musl/"
}
