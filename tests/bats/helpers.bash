# Shared by every .bats file. LD_PRELOAD is set only on the command under test,
# through `preload`; bats, bash and the helpers themselves never run preloaded.
bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

# The suite's locations come from one file meson writes into the build
# directory (bats_env in tests/meson.build). EPOLLFIX_BUILD names that
# directory: meson test and scripts/sanitize set it, a hand-run bats uses build/.
: "${EPOLLFIX_BUILD:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}"
bats_env_file=$EPOLLFIX_BUILD/tests/bats-env.bash
[ -f "$bats_env_file" ] || {
	echo "no $bats_env_file: run scripts/build (or meson setup) first" >&2
	return 1
}

# Nothing from the caller's environment may steer the library in a test: every
# EPOLLFIX_* variable goes but the sanitizer runtime scripts/sanitize preloads.
for v in $(env | sed -n 's/^\(EPOLLFIX_[A-Z_]*\)=.*/\1/p'); do
	[ "$v" = EPOLLFIX_PRELOAD_EXTRA ] || unset "$v"
done
# Nor may the machine's own system file (SYSCONFDIR/epollfix.conf): a test
# reads one only when it names it. (A setuid program ignores this variable and
# would still read that file.)
export EPOLLFIX_CONFIG=/nonexistent/epollfix.conf
# shellcheck source=/dev/null
source "$bats_env_file"
PROGS_SRC="$EPOLLFIX_SRC/tests/progs"

# preload [VAR=value...] command [args...]: the command alone gets the library.
# EPOLLFIX_PRELOAD_EXTRA (scripts/sanitize: the ASan runtime) goes first.
preload() {
	env LD_PRELOAD="${EPOLLFIX_PRELOAD_EXTRA:+$EPOLLFIX_PRELOAD_EXTRA:}$EPOLLFIX_LIB" "$@"
}

# The interpreter itself, not a wrapper script (pyenv's shim is bash), so that
# the preload reaches python and only python.
python_bin() {
	command -v python3 >/dev/null || return 1
	python3 -c 'import sys; print(sys.executable)'
}

# readme_block FILE LANG MARKER: the first ```LANG block after the line of FILE
# (README.md, or a page under doc/) that holds MARKER, as a user would copy it.
readme_block() {
	awk -v lang="$2" -v m="$3" 'index($0, m) { found = 1 } found && $0 == "```" lang { on = 1; next }
		on && /^```/ { exit } on { print }' "$EPOLLFIX_SRC/$1"
}

need_glibc() {
	[ "$EPOLLFIX_LIBC" = glibc ] || skip "needs a glibc build ($EPOLLFIX_LIBC)"
}

# field NAME: the value of NAME=value in $output.
field() {
	sed -n "s/.*\\b$1=\\([0-9-]*\\).*/\\1/p" <<<"$output" | head -1
}

# Medians in microseconds for thresholds a noisy 2-core VM cannot break: an
# upgraded wait is far under UPGRADED_US, a real 1 ms wait is over ROUNDED_US.
UPGRADED_US=500
ROUNDED_US=900

assert_upgraded() {
	local m
	m=$(field median_us)
	[ -n "$m" ] || fail "no median in: $output"
	[ "$m" -lt "$UPGRADED_US" ] || fail "median ${m}us is not under ${UPGRADED_US}us: $output"
}

assert_rounded() {
	local m
	m=$(field median_us)
	[ -n "$m" ] || fail "no median in: $output"
	[ "$m" -gt "$ROUNDED_US" ] || fail "median ${m}us is not over ${ROUNDED_US}us: $output"
}
