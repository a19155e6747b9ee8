#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"

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
	ef_log_sink(collect); /* the log gate's lines, here instead of stderr */
	ef_log_set_level(EF_LOG_WARN);
}

TestSuite(config, .init = reset);

Test(config, defaults)
{
	struct ef_config c;
	ef_config_from_env(&c, NULL, fake_getenv);
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
	ef_config_from_env(&c, NULL, fake_getenv);
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
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert_eq(c.subms_ns, 0);
}

Test(config, bad_value_warns_once_and_uses_default)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "abc");
	ef_config_from_env(&c, NULL, fake_getenv);
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
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert_eq(warning_lines, 2);
	cr_assert(strstr(warnings, "EPOLLFIX_SUBMS='2ms' is out of range (1ns to 1ms); using 50us\n"));
	cr_assert(strstr(warnings, "EPOLLFIX_MAX_MS='0' is out of range (1 to 1000); using 1\n"));
}

Test(config, words_are_listed)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_LOG", "loud");
	setenv_fake("EPOLLFIX_DISABLE", "yes");
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert(strstr(warnings, "EPOLLFIX_LOG='loud' is not one of quiet, warn, debug; using warn\n"));
	cr_assert(strstr(warnings, "EPOLLFIX_DISABLE='yes' is not one of 0, 1; using 1\n"));
	cr_assert_eq(c.disable, 1, "a garbled attempt to disable disables");
}

Test(config, go_is_a_word_auto_unless_off)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_GO", "off");
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert_eq(c.go, EF_GO_OFF);
	env_n = 0;
	setenv_fake("EPOLLFIX_GO", "maybe");
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert_eq(c.go, EF_GO_AUTO, "a value not understood: supervised, as by default");
	cr_assert_str_eq(warnings, "epollfix: EPOLLFIX_GO='maybe' is not one of off, auto; using auto\n");
}

Test(config, quiet_silences_warnings)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "abc");
	setenv_fake("EPOLLFIX_LOG", "quiet");
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert_eq(warning_lines, 0);
	cr_assert_eq(c.subms_ns, 50000);
}

Test(config, empty_is_unset)
{
	struct ef_config c;
	setenv_fake("EPOLLFIX_SUBMS", "");
	ef_config_from_env(&c, NULL, fake_getenv);
	cr_assert_eq(warning_lines, 0);
	cr_assert_eq(c.subms_ns, 50000);
}

Test(config, huge_value_gives_one_terminated_line)
{
	static char huge[20000];
	struct ef_config c;
	memset(huge, 'x', sizeof(huge) - 1);
	setenv_fake("EPOLLFIX_SLACK", huge);
	ef_config_from_env(&c, NULL, fake_getenv);
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
		if (ef_vars[i].kind == EF_KIND_TEXT)
			continue;
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
		static struct ef_text t;
		ef_config_defaults(&c);
		if (ef_vars[i].kind == EF_KIND_TEXT) {
			/* "" is unset, which needs no check. */
			cr_assert(!*ef_vars[i].text_fallback ||
				  ef_text_set(&t, &ef_vars[i], ef_vars[i].text_fallback, &msg) == 0,
				  "%s", ef_vars[i].env);
			continue;
		}
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
	/* One rule for every list: blanks around items are ignored, as in the
	 * caller lists. */
	cr_assert(ef_name_listed("nginx, redis-server", "redis-server", "x"));
	cr_assert(ef_name_listed(" \tnginx\t ,x", "nginx", "x"));
	cr_assert_not(ef_name_listed("ngi nx", "nginx", "nginx"), "blanks inside an item stay");
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

/* The documentation lists exactly the table's variables. names receives, for
 * each line that starts with line_start, every EPOLLFIX_ name on it. */
static int documented(const char *file, const char *line_start, char names[][64], int max)
{
	char path[4096], line[4096];
	int n = 0;
	snprintf(path, sizeof(path), "%s/%s", file[0] == '@' ? EF_BUILD_DIR : EF_SOURCE_DIR,
		 file + (file[0] == '@'));
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "cannot read %s", path);
	while (fgets(line, sizeof(line), f))
		for (const char *p = line; strncmp(line, line_start, strlen(line_start)) == 0 &&
					   (p = strstr(p, "EPOLLFIX_"));) {
			size_t len = strspn(p, "EPOLLFIX_ABCDEFGHIJKLMNOPQRSTUVWXYZ");
			cr_assert(n < max && len < 64);
			memcpy(names[n], p, len);
			names[n++][len] = '\0';
			p += len;
		}
	fclose(f);
	return n;
}

static void lists_exactly_the_table(const char *file, const char *line_start)
{
	char names[64][64];
	int n = documented(file, line_start, names, 64);
	for (size_t i = 0; i < ef_nvars; i++) {
		int seen = 0;
		for (int k = 0; k < n; k++)
			seen += strcmp(names[k], ef_vars[i].env) == 0;
		cr_expect_eq(seen, 1, "%s names %s %d times, not once", file, ef_vars[i].env, seen);
	}
	for (int k = 0; k < n; k++)
		cr_expect_not_null(ef_var_find(names[k]), "%s names %s, which is not in the table", file,
				   names[k]);
}

Test(config, readme_table_lists_the_table)
{
	lists_exactly_the_table("README.md", "| `EPOLLFIX_");
}

/* The generated page, from the build ("@": the build directory). */
Test(config, man_page_options_list_the_table)
{
	lists_exactly_the_table("@doc/epollfix.1", "[\\fBEPOLLFIX_");
}

Test(config, readme_rows_name_the_options)
{
	char path[4096], line[4096];
	snprintf(path, sizeof(path), "%s/README.md", EF_SOURCE_DIR);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	int rows = 0;
	while (fgets(line, sizeof(line), f)) {
		const struct ef_var *v = NULL;
		char env[64];
		if (sscanf(line, "| `%63[A-Z_]`", env) != 1 || !(v = ef_var_find(env)))
			continue;
		char option[80];
		snprintf(option, sizeof(option), "`--%s", v->name);
		cr_expect(strstr(line, option), "README's row of %s does not name %s`", env, option);
		rows++;
	}
	fclose(f);
	cr_expect_eq(rows, (int)ef_nvars);
}

Test(config, defaults_and_fallbacks_are_apart)
{
	struct ef_config c;
	ef_config_defaults(&c);
	cr_assert_eq(c.disable, 0, "the default: the library acts");
	cr_assert_eq(ef_var_find("disable")->fallback, 1, "a garbled attempt to disable disables");
}

Test(config, text_variables)
{
	struct ef_config c;
	static struct ef_text t;
	static char huge[5000];
	memset(huge, 'x', sizeof(huge) - 1);
	setenv_fake("EPOLLFIX_ONLY", "nginx,redis-server");
	setenv_fake("EPOLLFIX_STATS", huge);
	ef_config_from_env(&c, &t, fake_getenv);
	cr_assert_str_eq(t.only, "nginx,redis-server");
	cr_assert_str_eq(t.skip, "");
	cr_assert_str_eq(t.stats, "1", "a path too long to open: the report on stderr");
	cr_assert_eq(warning_lines, 1);
	cr_assert(strstr(warnings, "' is longer than 4095 characters; using 1\n"), "%s", warnings);
	char m[128];
	struct ef_buf msg = EF_BUF(m);
	cr_assert_eq(ef_config_set(&c, ef_var_find("only"), "x", &msg), -1, "not at run time");
	cr_assert_str_eq(m, "EPOLLFIX_ONLY is read once at start-up");
}

/* ---- The system file's parser ------------------------------------------- */

static void from_file(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
		      const char *text)
{
	ef_config_defaults(c);
	ef_text_defaults(t);
	memset(o, 0, sizeof(*o));
	ef_config_from_file(c, t, o, "/etc/epollfix.conf", text, strlen(text));
}

Test(config, file_values_comments_and_blank_lines)
{
	struct ef_config c;
	static struct ef_text t;
	struct ef_origin o;
	from_file(&c, &t, &o,
		  "# the host's policy\n"
		  "\n"
		  "subms = 20us\n"
		  "   max-ms=3   # three ms\n"
		  "\tadapt\t=\toff\r\n"
		  "only = nginx,redis-server\n"
		  "stats = /var/log/ef#%p\n"
		  "disable = 0"); /* no final newline */
	cr_assert_eq(warning_lines, 0, "%s", warnings);
	cr_assert_eq(c.subms_ns, 20000);
	cr_assert_eq(c.max_ms, 3);
	cr_assert_eq(c.adapt, 0);
	cr_assert_eq(c.disable, 0);
	cr_assert_str_eq(t.only, "nginx,redis-server");
	cr_assert_str_eq(t.stats, "/var/log/ef#%p", "a '#' inside a value is not a comment");
	cr_assert_eq(o.from[EF_VAR_subms_ns], EF_FROM_FILE);
	cr_assert_eq(o.line[EF_VAR_subms_ns], 3);
	cr_assert_eq(o.line[EF_VAR_max_ms], 4);
	cr_assert_eq(o.line[EF_VAR_only], 6);
	cr_assert_eq(o.from[EF_VAR_slack_ns], EF_FROM_DEFAULT);
	char shown[64];
	struct ef_buf b = EF_BUF(shown);
	ef_config_show_origin(&o, &ef_vars[EF_VAR_max_ms], "/etc/epollfix.conf", &b);
	cr_assert_str_eq(shown, "/etc/epollfix.conf:4");
}

Test(config, file_bad_lines_warn_with_file_line_and_text)
{
	struct ef_config c;
	static struct ef_text t;
	struct ef_origin o;
	from_file(&c, &t, &o,
		  "subms = abc\n"
		  "nonsense = 1\n"
		  "just words\n"
		  "EPOLLFIX_SLACK = keep\n"
		  "config = /tmp/other\n"
		  "disable = yes\n"
		  "max-ms = 3\n");
	cr_assert_eq(warning_lines, 6, "%s", warnings);
	cr_assert(strstr(warnings, "epollfix: /etc/epollfix.conf:1: 'subms = abc' is not a duration "
				   "(like 50us); using 50us\n"), "%s", warnings);
	cr_assert(strstr(warnings, "epollfix: /etc/epollfix.conf:2: 'nonsense = 1' is not a setting "
				   "of epollfix; ignored\n"));
	cr_assert(strstr(warnings, "epollfix: /etc/epollfix.conf:3: 'just words' is not key = value; "
				   "ignored\n"));
	cr_assert(strstr(warnings, ":4: 'EPOLLFIX_SLACK = keep' is not a setting of epollfix; ignored\n"),
		  "the file takes the runtime names");
	cr_assert(strstr(warnings, ":5: 'config = /tmp/other' cannot name another file; ignored\n"));
	cr_assert(strstr(warnings, ":6: 'disable = yes' is not one of 0, 1; using 1\n"));
	cr_assert_eq(c.disable, 1, "a garbled attempt to disable disables, as in the environment");
	cr_assert_eq(c.max_ms, 3, "good lines after bad ones still count");
	cr_assert_eq(c.slack_ns, 1000);
}

Test(config, file_log_quiet_silences_its_own_warnings)
{
	struct ef_config c;
	static struct ef_text t;
	struct ef_origin o;
	from_file(&c, &t, &o, "subms = abc\nlog = quiet\n");
	cr_assert_eq(warning_lines, 0, "%s", warnings);
	cr_assert_eq(c.log, EF_LOG_QUIET);
}

Test(config, environment_overrides_the_file)
{
	struct ef_config c;
	static struct ef_text t;
	struct ef_origin o;
	from_file(&c, &t, &o, "subms = 20us\nmax-ms = 3\nonly = nginx\n");
	setenv_fake("EPOLLFIX_SUBMS", "30us");
	setenv_fake("EPOLLFIX_ONLY", "redis-server");
	ef_config_apply_env(&c, &t, &o, fake_getenv);
	cr_assert_eq(c.subms_ns, 30000);
	cr_assert_eq(c.max_ms, 3);
	cr_assert_str_eq(t.only, "redis-server");
	cr_assert_eq(o.from[EF_VAR_subms_ns], EF_FROM_ENV);
	cr_assert_eq(o.from[EF_VAR_max_ms], EF_FROM_FILE);
	char shown[64];
	struct ef_buf b = EF_BUF(shown);
	ef_config_show_origin(&o, &ef_vars[EF_VAR_subms_ns], "/etc/epollfix.conf", &b);
	cr_assert_str_eq(shown, "environment (EPOLLFIX_SUBMS)");
}

Test(config, file_long_and_odd_lines_stay_bounded)
{
	static char text[20000];
	struct ef_config c;
	static struct ef_text t;
	struct ef_origin o;
	strcpy(text, "stats = ");
	memset(text + 8, 'x', 9000);
	strcpy(text + 9008, "\n= 1\n=\n#only\n   # x = y\nsubms=\nonly =\n");
	from_file(&c, &t, &o, text);
	cr_assert_str_eq(t.stats, "1", "too long: the fallback, stderr");
	cr_assert_str_eq(t.only, "");
	cr_assert(strstr(warnings, ":1: 'stats = xxxx"));
	cr_assert(strstr(warnings, "...' is too long; using 1\n"), "%s", warnings);
	cr_assert(strstr(warnings, ":2: '= 1' is not a setting of epollfix; ignored\n"));
	cr_assert(strstr(warnings, ":3: '=' is not a setting of epollfix; ignored\n"));
	cr_assert(strstr(warnings, ":6: 'subms=' is empty; using 50us\n"), "%s", warnings);
	cr_assert_eq(warning_lines, 4, "%s", warnings);
}

Test(config, example_file_shows_every_setting_at_its_default)
{
	char path[4096], line[4096], want[128];
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		if (v == &ef_vars[EF_VAR_config])
			continue;
		struct ef_buf b = EF_BUF(want);
		ef_fmt(&b, "# %s =%s", v->name, v->kind != EF_KIND_TEXT || *v->text_def ? " " : "");
		if (v->kind != EF_KIND_TEXT)
			ef_config_show(v->def, v, &b);
		else
			ef_fmt(&b, "%s", v->text_def);
		snprintf(path, sizeof(path), "%s/doc/epollfix.conf", EF_BUILD_DIR);
		FILE *f = fopen(path, "r");
		cr_assert_not_null(f);
		int found = 0;
		while (fgets(line, sizeof(line), f))
			found += strcmp(strtok(line, "\n") ? line : "", want) == 0;
		fclose(f);
		cr_expect_eq(found, 1, "doc/epollfix.conf has no line '%s'", want);
	}
}
