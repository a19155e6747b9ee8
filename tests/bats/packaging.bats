#!/usr/bin/env bats
# The packages, as their users install them: the Debian packages built by
# scripts/package-deb (lintian, apt-get install, the installed command, purge),
# and the wheel built by scripts/package-wheel (pip install into a fresh
# virtualenv, its command, python -m epollfix, epollfix.reexec()). Each test runs
# what the README's "Install" and "Turning it on" sections tell a user to run.
# The packages are built from the source tree, not from the build directory the
# suite runs for: they are tested once, in the run for build/ (scripts/test's
# glibc build) or when this file is run by hand, and skipped in the others
# (build-musl, scripts/sanitize's build-clang and build-asan).

setup_file() {
	: "${EPOLLFIX_SRC:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
	export PKG_OUT=$EPOLLFIX_SRC/build-pkg
	# What the checkout looked like before any package was built.
	export PKG_GIT_BEFORE=$BATS_FILE_TMPDIR/git-status
	git -C "$EPOLLFIX_SRC" status --porcelain >"$PKG_GIT_BEFORE" 2>/dev/null || rm -f "$PKG_GIT_BEFORE"
	# One checkout at a time installs and purges the packages on a machine: the
	# file's own shell holds the lock until its last test has run.
	export PKG_LOCK=/run/lock/epollfix-packaging.lock
	if [ "$(id -u)" = 0 ] && { ! exec 9>"$PKG_LOCK" || ! flock -w 600 9; }; then
		export PKG_NO_LOCK=1
	fi
}

setup() {
	load helpers
	need_glibc
	if [ -n "${EPOLLFIX_BUILD:-}" ] && [ "$(realpath "$EPOLLFIX_BUILD")" != "$(realpath "$EPOLLFIX_SRC/build")" ]; then
		skip "packages are built from the source, and tested in the run for build/ only (this is ${EPOLLFIX_BUILD##*/})"
	fi
	deb_dir=$PKG_OUT/deb
	wheel_dir=$PKG_OUT/wheel
	venv=$BATS_FILE_TMPDIR/venv
	py=$(python_bin) || skip "no python3"
}

# The packages test_install installed, if a later test did not purge them.
teardown_file() {
	if [ -f "$BATS_FILE_TMPDIR/installed" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq -o DPkg::Lock::Timeout=120 \
			libepollfix epollfix libepollfix-dev python3-epollfix >/dev/null 2>&1 || true
	fi
}

need_debian_tools() {
	[ "$(id -u)" = 0 ] || skip "installs packages: needs root"
	command -v dpkg-buildpackage >/dev/null || skip "no dpkg-buildpackage (scripts/install-deps)"
	command -v lintian >/dev/null || skip "no lintian (scripts/install-deps)"
}

# The checkout must look as it did before the packages were built.
assert_tree_clean() {
	[ -f "$PKG_GIT_BEFORE" ] || return 0
	run git -C "$EPOLLFIX_SRC" status --porcelain
	assert_success
	assert_equal "$output" "$(cat "$PKG_GIT_BEFORE")"
}

# The 50us asyncio demo with the library through COMMAND..., and without.
assert_demo() {
	run "$@" tests/progs/asyncio_sleep.py 50e-6 200
	assert_success
	assert_upgraded
	run "${@: -1}" tests/progs/asyncio_sleep.py 50e-6 200
	assert_success
	assert_rounded
}

@test "deb: dpkg-buildpackage builds libepollfix, epollfix, libepollfix-dev, python3-epollfix; lintian has no E: or W:" {
	need_debian_tools
	cd "$EPOLLFIX_SRC"
	run scripts/package-deb
	assert_success
	version=$(project_version)
	arch=$(dpkg --print-architecture)
	for deb in "libepollfix_${version}_$arch" "epollfix_${version}_$arch" "libepollfix-dev_${version}_all" \
		"python3-epollfix_${version}_$arch"; do
		assert_output --partial "$deb_dir/$deb.deb"
	done
	# lintian --fail-on error,warning already failed the script; the log says the same.
	run grep -E '^[EW]: ' "$deb_dir/lintian.txt"
	assert_failure
	run dpkg-deb -c "$deb_dir/libepollfix_${version}_$arch.deb"
	assert_line --regexp " \./usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libepollfix\.so$"
	assert_line --regexp " \./etc/epollfix\.conf$"
	run dpkg-deb -I "$deb_dir/libepollfix_${version}_$arch.deb" conffiles
	assert_output /etc/epollfix.conf
	run dpkg-deb -c "$deb_dir/epollfix_${version}_$arch.deb"
	assert_line --regexp " \./usr/bin/epollfix$"
	assert_line --regexp " \./usr/share/man/man1/epollfix\.1\.gz$"
	run dpkg-deb -f "$deb_dir/epollfix_${version}_$arch.deb" Depends
	assert_output --partial "libepollfix (= $version)"
	# The Go agent is in the command, with its unit and the options' file.
	run dpkg-deb -c "$deb_dir/epollfix_${version}_$arch.deb"
	assert_line --regexp " \./lib/systemd/system/epollfix-agent\.service$"
	assert_line --regexp " \./etc/default/epollfix-agent$"
	run dpkg-deb -I "$deb_dir/epollfix_${version}_$arch.deb" conffiles
	assert_output /etc/default/epollfix-agent
	# Never enabled nor started by the package: only an administrator's
	# own enabling is kept across an upgrade (was-enabled).
	run dpkg-deb -I "$deb_dir/epollfix_${version}_$arch.deb" postinst
	refute_output --partial "deb-systemd-invoke"
	[ "$(grep -c "deb-systemd-helper enable" <<<"$output")" = "$(grep -c "was-enabled" <<<"$output")" ] || fail "$output"
	assert_tree_clean
}

@test "deb: the version is meson.build's; a changelog that says another stops the build" {
	need_debian_tools
	cd "$EPOLLFIX_SRC"
	version=$(project_version)
	assert_equal "$(dpkg-parsechangelog -SVersion)" "$version"
	# debian/rules' own check, on a copy whose changelog is one version ahead.
	copy=$BATS_TEST_TMPDIR/src
	mkdir -p "$copy"
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$copy"
	sed -i "1s/($version)/($version.1)/" "$copy/debian/changelog"
	run bash -c "cd '$copy' && debian/rules override_dh_auto_configure 2>&1"
	assert_failure
	assert_output --partial "debian/changelog says $version.1, meson.build says $version"
}

# The README's container image, built as Docker would build it but without an
# engine (none runs here): the image's root is an overlay of this Debian
# machine's root in private mount and PID namespaces; COPY copies into it, RUN
# runs in it under chroot, ENV is all the environment its programs get.
in_image() { # in_image SCRIPT: bash -c SCRIPT, with $root the image's root
	local d=$BATS_TEST_TMPDIR/image
	mkdir -p "$d"
	unshare --mount --pid --fork bash -c "set -e; mount --make-rprivate /
		mount -t tmpfs tmpfs $d; mkdir $d/upper $d/work $d/root; root=$d/root
		mount -t overlay overlay -o lowerdir=/,upperdir=$d/upper,workdir=$d/work \$root
		mount -t proc proc \$root/proc; mount --rbind /dev \$root/dev
		mount -t tmpfs tmpfs \$root/tmp; mount -t tmpfs tmpfs \$root/run
		$1"
}

@test "deb: container image: the README's Dockerfile lines give python3 the library, and only python3" {
	need_debian_tools
	block=$(readme_block README.md dockerfile 'A **container image**')
	for d in "$deb_dir"/libepollfix_*.deb "$deb_dir"/epollfix_*.deb; do [ -f "$d" ] || fail "no $d: the build test failed"; done
	unshare --mount --pid --fork true 2>/dev/null || skip "cannot make mount and PID namespaces here"
	build= env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
	while read -r word rest; do
		case $word in
		COPY) build+="cp $EPOLLFIX_SRC/${rest% *} \$root${rest##* }"$'\n' ;;
		RUN) build+="chroot \$root env DEBIAN_FRONTEND=noninteractive /bin/sh -ec '$rest' >/dev/null"$'\n' ;;
		ENV) read -ra words <<<"$rest"; env+=("${words[@]}") ;;
		*) fail "a Dockerfile instruction this test does not know: $word $rest" ;;
		esac
	done <<<"$block"
	[[ "${env[*]}" == *LD_PRELOAD=* ]] || fail "no LD_PRELOAD in the README's Dockerfile: $block"
	# The image, then the README's check (with the epollfix package added),
	# then a Python asyncio loop and a C loop, each started as the image's
	# command with the image's environment alone.
	image="$build
		cp $deb_dir/epollfix_*.deb $PROGS_SRC/asyncio_sleep.py $EPOLLFIX_PROGS/ef-sleep \$root/tmp/
		chroot \$root /bin/sh -ec 'DEBIAN_FRONTEND=noninteractive apt-get install -qq -y /tmp/epollfix_*.deb' >/dev/null"
	run in_image "$image
		chroot \$root ${env[*]} epollfix --check"
	assert_success
	assert_line "library:      /usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libepollfix.so"
	run in_image "$image
		chroot \$root ${env[*]} python3 /tmp/asyncio_sleep.py 50e-6 200"
	assert_success
	assert_upgraded
	run in_image "$image
		chroot \$root ${env[*]} /tmp/ef-sleep --count 100"
	assert_success
	assert_rounded
}

@test "deb: apt-get install; the installed epollfix --check finds the library, the asyncio demo" {
	need_debian_tools
	debs=("$deb_dir"/libepollfix_*.deb "$deb_dir"/epollfix_*.deb "$deb_dir"/libepollfix-dev_*.deb
		"$deb_dir"/python3-epollfix_*.deb)
	for d in "${debs[@]}"; do [ -f "$d" ] || fail "no $d: the build test failed"; done
	# Never remove a user's own installation of the packages.
	if dpkg-query -W -f='${Status}\n' libepollfix epollfix libepollfix-dev python3-epollfix 2>/dev/null | grep -q ' installed$'; then
		skip "epollfix packages are installed on this machine; this test would purge them"
	fi
	[ -z "${PKG_NO_LOCK:-}" ] || fail "another checkout's package tests held $PKG_LOCK for 10 minutes"
	touch "$BATS_FILE_TMPDIR/installed" # teardown_file purges them if no test does
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=120 \
		--no-install-recommends "${debs[@]}"
	assert_success
	dpkg-query -L libepollfix epollfix libepollfix-dev python3-epollfix >"$BATS_FILE_TMPDIR/files"

	run /usr/bin/epollfix --check
	assert_success
	assert_line "library:      /usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libepollfix.so"
	# The agent's unit: disabled; as shipped, its options choose nothing, so
	# enabled it would start nothing (ExecCondition), and the agent itself
	# refuses to run with nothing chosen.
	if command -v systemctl >/dev/null; then
		run systemctl is-enabled epollfix-agent.service
		assert_output disabled
	fi
	if command -v systemd-analyze >/dev/null && command -v man >/dev/null; then
		run systemd-analyze verify /lib/systemd/system/epollfix-agent.service
		assert_success
	fi
	run bash -c '. /etc/default/epollfix-agent && echo "[$EPOLLFIX_AGENT_OPTS]"'
	assert_output "[]"
	# The unit's ExecCondition, as systemd runs it with that file: 1 (the unit
	# skipped, not failed) as shipped, 0 once something is chosen.
	cond=$(sed -n 's/^ExecCondition=//p' /lib/systemd/system/epollfix-agent.service)
	run env -i bash -c 'set -a && . /etc/default/epollfix-agent && eval "$1"' _ "$cond"
	assert_failure 1
	run env -i bash -c 'set -a && . /etc/default/epollfix-agent && EPOLLFIX_AGENT_OPTS=--all && eval "$1"' _ "$cond"
	assert_success
	run --separate-stderr /usr/bin/epollfix agent --quiet
	assert_failure 2
	assert_equal "$(sed -n 1p <<<"$stderr")" "epollfix agent: no process chosen (--all, --path, --cgroup, --unit or --pods): nothing to do"
	run /usr/bin/epollfix agent --help
	assert_success
	cd "$EPOLLFIX_SRC"
	assert_demo /usr/bin/epollfix "$py"
	# python3-epollfix: the system python3's exact timeouts, on under the library.
	run env LD_PRELOAD="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libepollfix.so" \
		/usr/bin/python3 tests/progs/py_exact.py state
	assert_output "active=1"
	run /usr/bin/python3 -c 'import epollfix; print(epollfix.enable())'
	assert_output "True"
	# libepollfix-dev's header builds a program on its own.
	printf '#include <epollfix.h>\nint main(void) { struct epollfix_counters c = {0}; return (int)c.upgraded; }\n' \
		>"$BATS_TEST_TMPDIR/api.c"
	run cc -Wall -Wextra -Werror -fsyntax-only "$BATS_TEST_TMPDIR/api.c"
	assert_success
}

# The README's whole-host form, for real but in a private mount namespace: /etc
# is an overlay there, so /etc/ld.so.preload and the edited /etc/epollfix.conf
# reach the programs this test starts in it and no other process of the machine.
# No EPOLLFIX_* variable reaches the programs there (helpers.bash may point
# EPOLLFIX_CONFIG away from the machine's file): /etc/epollfix.conf speaks.
in_host_ns() { # in_host_ns SCRIPT: bash -c SCRIPT with the namespace's /etc
	local d=$BATS_TEST_TMPDIR/etc
	mkdir -p "$d/upper" "$d/work"
	env -u EPOLLFIX_CONFIG unshare --mount bash -c "set -e; mount --make-rprivate /
		mount -t overlay overlay -o lowerdir=/etc,upperdir=$d/upper,workdir=$d/work /etc
		$1"
}

@test "deb: whole host: /etc/ld.so.preload with adapt = safe and only = in /etc/epollfix.conf" {
	need_debian_tools
	[ -f "$BATS_FILE_TMPDIR/installed" ] || fail "not installed: the install test failed"
	[ -f /etc/epollfix.conf ] || fail "libepollfix installed no /etc/epollfix.conf"
	in_host_ns true 2>/dev/null || skip "cannot make a mount namespace with an overlay /etc here"
	lib=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libepollfix.so
	cd "$EPOLLFIX_SRC"
	# The README's commands: the library checked first, then the two files.
	setup_host="printf 'adapt = safe\nonly = python3\n' >>/etc/epollfix.conf
		LD_PRELOAD=$lib /bin/true && echo $lib >>/etc/ld.so.preload"
	# No LD_PRELOAD anywhere: python3 (comm python3) gets the library and
	# the C loop, not in only =, is left alone.
	[ "$(basename "$py")" = python3 ] || skip "the interpreter is not named python3: $py"
	run in_host_ns "$setup_host
		$py tests/progs/asyncio_sleep.py 50e-6 200"
	assert_success
	assert_upgraded
	run in_host_ns "$setup_host
		$EPOLLFIX_PROGS/ef-sleep --count 100"
	assert_success
	assert_rounded
	# Setuid programs load it too, where LD_PRELOAD never reaches them: a
	# setuid-root cat run by nobody reads its own ids and maps.
	command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
	suid=$(mktemp -d /tmp/epollfix-suid.XXXXXX)
	chmod 755 "$suid"
	install -m 4755 "$(command -v cat)" "$suid/cat"
	nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run in_host_ns "$setup_host
		${nobody[*]} $suid/cat /proc/self/status /proc/self/maps"
	host_status=$status host_output=$output
	run "${nobody[@]}" env LD_PRELOAD="$lib" "$suid/cat" /proc/self/status /proc/self/maps
	rm -rf "$suid"
	assert_success
	assert_line --regexp $'^Uid:\t65534\t0\t'
	refute_output --partial libepollfix.so
	[ "$host_status" = 0 ] || fail "the setuid cat failed under /etc/ld.so.preload: $host_output"
	grep -q $'^Uid:\t65534\t0\t' <<<"$host_output" || fail "not setuid: $host_output"
	grep -q "$lib" <<<"$host_output" || fail "/etc/ld.so.preload did not reach the setuid cat: $host_output"
	# A broken entry: every program says so on stderr, and still runs; the
	# README's recovery (remove the file) works from any shell.
	run --separate-stderr in_host_ns "echo /nonexistent/libepollfix.so >/etc/ld.so.preload
		/bin/echo ran; rm /etc/ld.so.preload; /bin/echo recovered >&2"
	assert_success
	assert_output ran
	assert_equal "$(grep -c "ERROR: ld.so: object '/nonexistent/libepollfix.so' from /etc/ld.so.preload cannot be preloaded" <<<"$stderr")" 2
	assert_equal "$(tail -n 1 <<<"$stderr")" recovered
}

@test "deb: apt-get purge leaves no file the packages installed" {
	need_debian_tools
	[ -f "$BATS_FILE_TMPDIR/installed" ] || fail "not installed: the install test failed"
	run env DEBIAN_FRONTEND=noninteractive apt-get purge -y -o DPkg::Lock::Timeout=120 \
		libepollfix epollfix libepollfix-dev python3-epollfix
	assert_success
	rm "$BATS_FILE_TMPDIR/installed"
	# Every file is gone, conffiles too; a directory stays only while another
	# package has files in it.
	left=
	while read -r path; do
		if [ -d "$path" ]; then
			[ -n "$(ls -A "$path")" ] || left+=" $path"
		elif [ -e "$path" ] || [ -L "$path" ]; then
			left+=" $path"
		fi
	done <"$BATS_FILE_TMPDIR/files"
	[ -z "$left" ] || fail "left after purge:$left"
	# Purged: dpkg knows them no more, or as not installed ("pn"), not as
	# config-files ("rc").
	remaining=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' libepollfix epollfix libepollfix-dev python3-epollfix \
		2>/dev/null | grep -E '^.[^n]' || true)
	[ -z "$remaining" ] || fail "still known to dpkg: $remaining"
}

@test "wheel: built from source (sdist, then the wheel from it) for the glibc its binaries need" {
	"$py" -c 'import venv, ensurepip' 2>/dev/null || skip "no venv module (python3-venv)"
	cd "$EPOLLFIX_SRC"
	run scripts/package-wheel
	assert_success
	whl=${lines[-1]}
	# The extension is built for this interpreter: a cpXY wheel.
	tag=$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
	[[ "$whl" == "$wheel_dir"/dist/epollfix-*-$tag-$tag-manylinux_2_*_x86_64.whl ]] || fail "not a manylinux $tag wheel: $whl"
	ls "$wheel_dir"/raw/epollfix-*.tar.gz >/dev/null || fail "no sdist"
	# The highest GLIBC_2.N that the library, the command and the extension ask
	# for is the tag's 2.N.
	"$py" -m zipfile -e "$whl" "$BATS_TEST_TMPDIR/whl"
	need=$(objdump -T "$BATS_TEST_TMPDIR"/whl/epollfix/_native/{libepollfix.so,epollfix} \
		"$BATS_TEST_TMPDIR"/whl/epollfix/_epollfix.*.so |
		grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1)
	need=${need#GLIBC_}
	[[ "$whl" == *"-manylinux_${need/./_}_x86_64.whl" ]] || fail "$whl is not tagged for glibc $need"
	assert_tree_clean
}

@test "wheel: pip install into a fresh virtualenv; its epollfix and python -m epollfix are the C command" {
	whl=$(ls "$wheel_dir"/dist/epollfix-*.whl) || fail "no wheel: the build test failed"
	"$py" -m venv "$venv"
	run "$venv/bin/pip" install -q --no-index --disable-pip-version-check "$whl"
	assert_success
	run "$venv/bin/epollfix" --check
	assert_success
	assert_line --regexp "^library: +$venv/lib/python3[.0-9]*/site-packages/epollfix/_native/libepollfix\.so$"
	run "$venv/bin/python" -m epollfix --check
	assert_success
	# The options and exit statuses are the C command's own.
	run "$venv/bin/python" -m epollfix --subms=abc true
	assert_failure 2
	assert_output --partial "EPOLLFIX_SUBMS='abc' is not a duration"
	run "$venv/bin/epollfix" --version
	assert_output "epollfix $("$venv/bin/python" -c 'import epollfix; print(epollfix.__version__)')"
	# The exact timeouts: on at the interpreter's start under the library, and
	# by epollfix.enable() without it.
	run "$venv/bin/epollfix" "$venv/bin/python" "$EPOLLFIX_SRC/tests/progs/py_exact.py" state
	assert_output "active=1"
	run "$venv/bin/python" -c 'import epollfix; print(epollfix.enable())'
	assert_output "True"
	cd "$EPOLLFIX_SRC"
	assert_demo "$venv/bin/epollfix" "$venv/bin/python"
}

# reexec_sleep.py prints "start ..." at each start of the interpreter.
@test "wheel: epollfix.reexec() re-executes once under the library; a no-op when it is loaded" {
	[ -x "$venv/bin/python" ] || fail "no virtualenv: the install test failed"
	cd "$EPOLLFIX_SRC"
	run "$venv/bin/python" tests/progs/reexec_sleep.py 50e-6 200
	assert_success
	assert_equal "$(grep -c '^start ' <<<"$output")" 2
	assert_line --index 0 --partial "loaded=False"
	assert_line --index 1 --partial "loaded=True"
	assert_line "reexec=True"
	assert_upgraded
	# Already loaded (here by the wheel's own command): one start, no exec.
	run "$venv/bin/epollfix" "$venv/bin/python" tests/progs/reexec_sleep.py 50e-6 50
	assert_success
	assert_equal "$(grep -c '^start ' <<<"$output")" 1
	assert_line "reexec=True"
	# Before Python 3.10 there is no sys.orig_argv: /proc/self/cmdline, with -X.
	run env REEXEC_SLEEP_NO_ORIG_ARGV=1 "$venv/bin/python" -X utf8 tests/progs/reexec_sleep.py 50e-6 50
	assert_success
	assert_equal "$(grep -c '^start ' <<<"$output")" 2
	assert_line "reexec=True"
}

@test "wheel: reexec() does not loop when the library still does not load: one warning, two starts" {
	[ -x "$venv/bin/python" ] || fail "no virtualenv: the install test failed"
	lib=$("$venv/bin/python" -c 'import epollfix; print(epollfix.library_path())')
	# The dynamic loader refuses the file (as LD_PRELOAD is ignored for a static
	# or setuid interpreter): the re-executed process must not exec again.
	echo "not an ELF object" >"$lib"
	cd "$EPOLLFIX_SRC"
	run --separate-stderr "$venv/bin/python" tests/progs/reexec_sleep.py 50e-6 50
	assert_success
	assert_equal "$(grep -c '^start ' <<<"$output")" 2
	assert_line "reexec=False"
	assert_rounded
	assert_equal "$(grep -c 'RuntimeWarning: epollfix.reexec(): the library is still not loaded' <<<"$stderr")" 1
}

# The arm64 packages, cross-built from the same tree with Debian's
# gcc-aarch64-linux-gnu and the arm64 headers scripts/build-arm64 unpacks
# (scripts/build makes both): a missing cross build is a skip, a failure in CI.
need_cross() {
	command -v aarch64-linux-gnu-gcc >/dev/null ||
		skip_missing "no aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu: scripts/install-deps)"
	[ -f "$EPOLLFIX_SRC/build/kernels/arm64/sysroot.ini" ] && [ -f "$EPOLLFIX_SRC/build-arm64/src/libepollfix.so" ] ||
		skip_missing "no aarch64 cross build (scripts/build-arm64, which scripts/build runs)"
}

# The files of a package, the multiarch triplet made ARCH.
deb_files() { dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's/x86_64-linux-gnu/ARCH/; s/aarch64-linux-gnu/ARCH/'; }

@test "deb arm64: cross-built, the amd64 packages' files and fields but the agent's; lintian has no E: or W:" {
	need_debian_tools
	need_cross
	cd "$EPOLLFIX_SRC"
	version=$(project_version)
	for p in libepollfix epollfix python3-epollfix; do
		[ -f "$deb_dir/${p}_${version}_amd64.deb" ] || fail "no amd64 $p: the build test failed"
	done
	run scripts/package-deb --arch arm64
	assert_success
	arm=$PKG_OUT/deb-arm64
	for p in libepollfix epollfix python3-epollfix; do
		assert_output --partial "$arm/${p}_${version}_arm64.deb"
	done
	# libepollfix-dev is architecture-independent: the native build's.
	refute_output --partial libepollfix-dev
	run grep -E '^[EW]: ' "$arm/lintian.txt"
	assert_failure
	for p in libepollfix epollfix python3-epollfix; do
		amd=$deb_dir/${p}_${version}_amd64.deb deb=$arm/${p}_${version}_arm64.deb
		assert_equal "$(dpkg-deb -f "$deb" Architecture)" arm64
		# The same files, but epollfix's agent unit and its options' file
		# (the agent is built on amd64 only).
		run diff <(deb_files "$amd") <(deb_files "$deb")
		if [ "$p" = epollfix ]; then
			assert_equal "$(grep '^<' <<<"$output" | sort | tr '\n' ' ')" \
				"< ./etc/ < ./etc/default/ < ./etc/default/epollfix-agent < ./lib/ < ./lib/systemd/ < ./lib/systemd/system/ < ./lib/systemd/system/epollfix-agent.service "
			refute_output --regexp '^>'
		else
			assert_success
		fi
		# The same fields but the size and the architecture, and libbpf,
		# which only the agent links.
		run diff <(dpkg-deb -f "$amd" | grep -vE '^(Architecture|Installed-Size):' | sed 's/ libbpf1 ([^)]*),//') \
			<(dpkg-deb -f "$deb" | grep -vE '^(Architecture|Installed-Size):')
		assert_success
	done
	run dpkg-deb -f "$arm/libepollfix_${version}_arm64.deb" Depends
	assert_output --regexp '^libc6 \(>= 2\.[0-9]+\)$'
	run dpkg-deb -I "$arm/libepollfix_${version}_arm64.deb" conffiles
	assert_output /etc/epollfix.conf
	# No unit, so no maintainer script that would enable one.
	run dpkg-deb -I "$arm/epollfix_${version}_arm64.deb"
	refute_output --regexp ' (conffiles|postinst|prerm|postrm) '
	# Its binaries are aarch64's.
	dpkg-deb -x "$arm/libepollfix_${version}_arm64.deb" "$BATS_TEST_TMPDIR/lib"
	dpkg-deb -x "$arm/epollfix_${version}_arm64.deb" "$BATS_TEST_TMPDIR/lib"
	run file -L "$BATS_TEST_TMPDIR/lib/usr/lib/aarch64-linux-gnu/libepollfix.so" "$BATS_TEST_TMPDIR/lib/usr/bin/epollfix"
	[ "$(grep -c 'ELF 64-bit LSB .*ARM aarch64' <<<"$output")" = 2 ] || fail "$output"
	assert_tree_clean
}

@test "wheel aarch64: cross-built, tagged manylinux for the glibc its binaries need; pip takes it for an aarch64 CPython 3.11" {
	need_cross
	"$py" -c 'import venv, ensurepip' 2>/dev/null || skip "no venv module (python3-venv)"
	[ "$(python3 -c 'import sys; print(sys.version_info[:2] == (3, 11))')" = True ] ||
		skip "python3 is not 3.11, the version of Debian 12's arm64 CPython headers"
	cd "$EPOLLFIX_SRC"
	run scripts/package-wheel --arch aarch64
	assert_success
	whl=${lines[-1]}
	[[ "$whl" == "$PKG_OUT"/wheel-aarch64/dist/epollfix-*-cp311-cp311-manylinux_2_*_aarch64.whl ]] ||
		fail "not a manylinux aarch64 cp311 wheel: $whl"
	"$py" -m zipfile -e "$whl" "$BATS_TEST_TMPDIR/whl"
	bins=("$BATS_TEST_TMPDIR"/whl/epollfix/_native/{libepollfix.so,epollfix}
		"$BATS_TEST_TMPDIR"/whl/epollfix/_epollfix.cpython-311-aarch64-linux-gnu.so)
	run file "${bins[@]}"
	[ "$(grep -c 'ELF 64-bit LSB .*ARM aarch64' <<<"$output")" = 3 ] || fail "$output"
	# The tag's glibc is the highest GLIBC_2.N its binaries ask for, as for
	# the native wheel.
	need=$(aarch64-linux-gnu-objdump -T "${bins[@]}" | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1)
	need=${need#GLIBC_}
	[[ "$whl" == *"-manylinux_${need/./_}_aarch64.whl" ]] || fail "$whl is not tagged for glibc $need"
	# pip installs it where an aarch64 CPython 3.11 with that glibc would;
	# the arm64 guest test runs what it installed.
	site=$PKG_OUT/arm64-guest/wheel
	rm -rf "$site"
	run "$PKG_OUT/wheel/venv/bin/pip" install -q --no-index --no-deps --disable-pip-version-check \
		--target "$site" --platform "manylinux_${need/./_}_aarch64" --python-version 3.11 \
		--implementation cp --abi cp311 --only-binary=:all: "$whl"
	assert_success
	[ -x "$site/epollfix/_native/epollfix" ] || fail "the wheel's command is not executable once installed"
	# An older glibc's aarch64 is refused.
	run "$PKG_OUT/wheel/venv/bin/pip" install -q --no-index --no-deps --disable-pip-version-check \
		--target "$BATS_TEST_TMPDIR/old" --platform manylinux_2_28_aarch64 --python-version 3.11 \
		--implementation cp --abi cp311 --only-binary=:all: "$whl"
	assert_failure
	assert_tree_clean
}

# One guest for both: Debian 12's arm64 6.12 kernel under qemu-system-aarch64
# (emulated: 10-20 s here), with its own arm64 userland (scripts/kernel-guest).
@test "arm64 guest: the arm64 .deb's library, command and python3-epollfix, the aarch64 wheel's enable() and command, and the arm64 image's command upgrade waits" {
	need_cross
	version=$(project_version)
	arm=$PKG_OUT/deb-arm64 guest=$PKG_OUT/arm64-guest
	for p in libepollfix epollfix python3-epollfix; do
		[ -f "$arm/${p}_${version}_arm64.deb" ] || fail "no arm64 $p: the arm64 build test failed (or was skipped)"
	done
	[ -d "$guest/wheel/epollfix" ] || fail "no installed aarch64 wheel: the aarch64 wheel test failed (or was skipped)"
	# Where the guest sees them: under the checkout, as dpkg would install them.
	rm -rf "$guest/deb"
	for p in libepollfix epollfix python3-epollfix; do
		dpkg-deb -x "$arm/${p}_${version}_arm64.deb" "$guest/deb"
	done
	cd "$EPOLLFIX_SRC"
	# And the arm64 image's files (containers.bats builds the image itself).
	run scripts/package-image --arch arm64 "$guest/image"
	assert_success
	run scripts/kernel-guest --timeout 600 6.12-arm64 sh tests/kernels/arm64-packages \
		"$guest/deb" "$guest/wheel" "$guest/image" "$EPOLLFIX_SRC/build-arm64" "$EPOLLFIX_SRC/build-arm64-musl"
	[ "$status" != 77 ] || skip_missing "no arm64 guest: $(tail -1 <<<"$output")"
	assert_success
	refute_output --partial "not ok"
	# Every test ran (the guest's console may end its lines with \r).
	[ "$(grep -c '^ok ' <<<"$output")" = 7 ] || fail "not 7 tests passed: $output"
}
