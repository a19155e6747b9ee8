#include <criterion/criterion.h>
#include <string.h>

#include "config.h"

static const char *env_names[8], *env_values[8];
static int env_n;
static char warnings[4096];
static int warning_lines;

static const char *fake_getenv(const char *name)
{
	for (int i = 0; i < env_n; i++)
		if (strcmp(env_names[i], name) == 0)
			return env_values[i];
	return NULL;
}

static void collect(const struct ef_buf *line)
{
	strncat(warnings, line->p, sizeof(warnings) - strlen(warnings) - 1);
	warning_lines++;
}

static void setenv_fake(const char *name, const char *value)
{
	env_names[env_n] = name;
	env_values[env_n++] = value;
}

static void reset(void)
{
	env_n = 0;
	warnings[0] = '\0';
	warning_lines = 0;
}

TestSuite(config, .init = reset);

Test(config, defaults)
{
	struct ef_config c;
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(c.disable, 0);
	cr_assert_eq(c.subms_ns, 50000);
	cr_assert_eq(c.max_ms, 1);
	cr_assert_eq(c.slack_ns, 1000);
	cr_assert_eq(c.log, EF_LOG_WARN);
	cr_assert_eq(c.clamp_ns, 0);
	cr_assert_eq(c.clamp_after, 16);
	cr_assert_eq(c.clamp_gap_ns, 1000);
	cr_assert_eq(warning_lines, 0);
}

Test(config, good_values)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "0.02ms");
	setenv_fake("EPOLLFIX_MAX_MS", "3");
	setenv_fake("EPOLLFIX_SLACK", "keep");
	setenv_fake("EPOLLFIX_DISABLE", "1");
	setenv_fake("EPOLLFIX_CLAMP", "1ms");
	setenv_fake("EPOLLFIX_LOG", "debug");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(c.subms_ns, 20000);
	cr_assert_eq(c.max_ms, 3);
	cr_assert_eq(c.slack_ns, -1);
	cr_assert_eq(c.disable, 1);
	cr_assert_eq(c.clamp_ns, 1000000);
	cr_assert_eq(c.log, EF_LOG_DEBUG);
	cr_assert_eq(warning_lines, 0);
}

Test(config, off_words)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "off");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(c.subms_ns, 0);
}

Test(config, bad_value_warns_once_and_uses_default)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "abc");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(c.subms_ns, 50000);
	cr_assert_eq(warning_lines, 1);
	cr_assert_str_eq(warnings, "epollfix: EPOLLFIX_SUBMS='abc' is not a duration (like 50us); "
				   "using 50us\n");
}

Test(config, range_is_named)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "2ms");
	setenv_fake("EPOLLFIX_MAX_MS", "0");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(warning_lines, 2);
	cr_assert(strstr(warnings, "EPOLLFIX_SUBMS='2ms' is out of range (1ns to 1ms); using 50us\n"));
	cr_assert(strstr(warnings, "EPOLLFIX_MAX_MS='0' is out of range (1 to 1000); using 1\n"));
}

Test(config, words_are_listed)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_LOG", "loud");
	setenv_fake("EPOLLFIX_DISABLE", "yes");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert(strstr(warnings, "EPOLLFIX_LOG='loud' is not one of quiet, warn, debug; using warn\n"));
	cr_assert(strstr(warnings, "EPOLLFIX_DISABLE='yes' is not one of 0, 1; using 1\n"));
	cr_assert_eq(c.disable, 1, "a garbled attempt to disable disables");
}

Test(config, quiet_silences_warnings)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "abc");
	setenv_fake("EPOLLFIX_LOG", "quiet");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(warning_lines, 0);
	cr_assert_eq(c.subms_ns, 50000);
}

Test(config, empty_is_unset)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "");
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(warning_lines, 0);
	cr_assert_eq(c.subms_ns, 50000);
}

Test(config, huge_value_gives_one_terminated_line)
{
	static char huge[20000];
	struct ef_config c;
	memset(huge, 'x', sizeof(huge) - 1);
	setenv_fake("EPOLLFIX_SLACK", huge);
	ef_config_from_env(&c, fake_getenv, collect);
	cr_assert_eq(warning_lines, 1);
	cr_assert_eq(warnings[strlen(warnings) - 1], '\n');
	cr_assert_eq(c.slack_ns, 1000);
}

Test(config, set_by_either_name_and_refusal_leaves_config)
{
	struct ef_config c;
	char text[256];
	struct ef_buf msg = EF_BUF(text);
	ef_config_defaults(&c);
	cr_assert_eq(ef_config_set(&c, ef_var_find("subms"), "20us", &msg), 0);
	cr_assert_eq(c.subms_ns, 20000);
	cr_assert_eq(ef_config_set(&c, ef_var_find("EPOLLFIX_SUBMS"), "30us", &msg), 0);
	cr_assert_eq(c.subms_ns, 30000);
	cr_assert_eq(ef_config_set(&c, ef_var_find("subms"), "-1us", &msg), -1);
	cr_assert_eq(c.subms_ns, 30000);
	cr_assert_str_eq(text, "EPOLLFIX_SUBMS='-1us' is negative (1ns to 1ms)");
	cr_assert_null(ef_var_find("nope"));
}

Test(config, show_round_trips_through_set)
{
	struct ef_config c, d;
	ef_config_defaults(&c);
	c.slack_ns = -1;
	c.subms_ns = 0;
	for (size_t i = 0; i < ef_nvars; i++) {
		char text[64], msg_text[128];
		struct ef_buf out = EF_BUF(text), msg = EF_BUF(msg_text);
		ef_config_show(ef_config_get(&c, &ef_vars[i]), &ef_vars[i], &out);
		ef_config_defaults(&d);
		cr_assert_eq(ef_config_set(&d, &ef_vars[i], text, &msg), 0, "%s=%s", ef_vars[i].name, text);
		cr_assert_eq(ef_config_get(&d, &ef_vars[i]), ef_config_get(&c, &ef_vars[i]));
	}
}

Test(config, every_fallback_is_accepted)
{
	/* A fallback the variable itself would refuse would make a warning lie. */
	for (size_t i = 0; i < ef_nvars; i++) {
		struct ef_config c;
		char text[64], msg_text[128];
		struct ef_buf out = EF_BUF(text), msg = EF_BUF(msg_text);
		ef_config_defaults(&c);
		ef_config_show(ef_vars[i].fallback, &ef_vars[i], &out);
		cr_assert_eq(ef_config_set(&c, &ef_vars[i], text, &msg), 0, "%s", ef_vars[i].env);
	}
}

Test(programs, names_match_comm_or_argv0_basename)
{
	cr_assert(ef_name_listed("nginx", "nginx", "/usr/sbin/nginx"));
	cr_assert(ef_name_listed("a,python3,b", "python3", "python3"));
	cr_assert(ef_name_listed("server", "other", "./bin/server"));
	cr_assert(ef_name_listed("server", "server", "x"));
	cr_assert_not(ef_name_listed("serve", "server", "/bin/server"), "whole names only");
	cr_assert_not(ef_name_listed("server,", "xserver", "/bin/xserver"));
	cr_assert_not(ef_name_listed(",,", "", ""), "empty items match nothing");
	cr_assert_not(ef_name_listed("", "a", "a"));
	cr_assert_not(ef_name_listed(NULL, "a", "a"));
	/* The kernel cuts comm at 15 characters: long names match through argv[0]. */
	cr_assert(ef_name_listed("a-very-long-program-name", "a-very-long-pro", "/bin/a-very-long-program-name"));
	cr_assert_not(ef_name_listed("a-very-long-pro-other", "a-very-long-pro", "/bin/a-very-long-pro-gram"));
}

Test(programs, only_skip_and_both)
{
	char text[256];
	struct ef_buf msg = EF_BUF(text);
	cr_assert(ef_program_selected(NULL, NULL, "x", "x", &msg));
	cr_assert(ef_program_selected("", "", "x", "x", &msg));
	cr_assert(ef_program_selected("x", NULL, "x", "x", &msg));
	cr_assert_not(ef_program_selected("y", NULL, "x", "x", &msg));
	cr_assert_not(ef_program_selected(NULL, "x", "x", "x", &msg));
	cr_assert(ef_program_selected(NULL, "y", "x", "x", &msg));
	cr_assert_eq(msg.len, 0);
	cr_assert_not(ef_program_selected("x", "y", "x", "x", &msg), "both: leave the program alone");
	cr_assert_str_eq(text, "EPOLLFIX_ONLY='x' and EPOLLFIX_SKIP='y' are both set; "
			       "using neither and leaving this program alone");
}
