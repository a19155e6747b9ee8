#!/usr/bin/env bats
# The README's deployment recipes as a user copies them (the unit that takes
# the report at ExecStop from doc/operations.md): the systemd units are
# checked by systemd itself (systemd-analyze verify: syntax, keys, that the
# programs exist); no service is started, since no systemd runs as init here.
# The whole-host and container-image recipes run in tests/bats/packaging.bats,
# with the packages they install.

load helpers

setup() {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	units=$BATS_TEST_TMPDIR/units
	mkdir -p "$units"
}

# verify UNIT: systemd-analyze verify, which must say nothing at all.
verify() {
	run --separate-stderr env SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify --man=no "$units/$1"
	assert_success
	[ -z "$stderr$output" ] || fail "systemd-analyze: $stderr$output"
}

@test "recipes: the README's systemd drop-in is a valid drop-in that sets the preload" {
	block=$(readme_block README.md ini 'A **systemd service**')
	grep -q '^Environment=LD_PRELOAD=' <<<"$block" || fail "no drop-in in the README: $block"
	printf '[Unit]\nDescription=a service\n[Service]\nExecStart=%s --count 5\n' \
		"$EPOLLFIX_PROGS/ef-sleep" >"$units/myapp.service"
	mkdir "$units/myapp.service.d"
	printf '%s\n' "$block" >"$units/myapp.service.d/epollfix.conf"
	verify myapp.service
	# The check is real: a mistyped key in the same drop-in is reported.
	printf 'Enviroment=X=1\n' >>"$units/myapp.service.d/epollfix.conf"
	run --separate-stderr env SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify --man=no "$units/myapp.service"
	grep -q "Unknown key 'Enviroment'" <<<"$stderr" || fail "no warning for a bad key: $stderr"
}

@test "recipes: doc/operations.md's unit that takes the report at ExecStop verifies with the installed command's path" {
	block=$(readme_block doc/operations.md ini '## Stopping a service with its report')
	grep -q '^ExecStop=' <<<"$block" || fail "no unit in doc/operations.md: $block"
	# The page's paths, swapped for the built command and a real server.
	block=$(sed -e "s|/usr/local/bin/epollfix|$EPOLLFIX_CMD|g" \
		-e "s|/usr/sbin/haproxy -Ws -f /etc/haproxy/haproxy.cfg|$EPOLLFIX_PROGS/ef-server|" <<<"$block")
	printf '[Unit]\nDescription=a service\n%s\n' "$block" >"$units/server.service"
	verify server.service
}
