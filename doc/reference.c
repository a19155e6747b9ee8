/* The variable reference, made from the configuration table (config.h) at
 * build time: the README's table (md), the man page's OPTIONS (man, spliced
 * into doc/epollfix.1.in) and the commented sample file (conf, spliced into
 * doc/epollfix.conf.in, from which epollfix.conf(5) is made in turn). Names,
 * variables, options, arguments and defaults come from the table; the prose of
 * each variable is below, keyed by its name, and the build fails when a
 * variable has none or a text names no variable. So no copy of the reference
 * is written by hand, and none can drift from what the library accepts.
 *
 * usage: ef-reference md
 *        ef-reference man TEMPLATE VERSION
 *        ef-reference conf TEMPLATE
 * A template's line holding @OPTIONS@ (man) or @SETTINGS@ (conf) is replaced
 * by the reference; @VERSION@ by VERSION. The prose is Markdown's subset the
 * README needs: `code` spans, nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const struct prose {
	const char *name, *text;
} prose[] = {
	{ "disable", "`1`: every call passes through untouched" },
	{ "subms", "the wait that replaces a 1 ms timeout judged rounded-up (1ns to 1ms); `off` "
		   "disables upgrades" },
	{ "max-ms", "timeouts of 1..N ms count as rounded-up (1 to 1000); a T ms timeout then "
		    "waits (T-1) ms + SUBMS" },
	{ "slack", "timer slack (`PR_SET_TIMERSLACK`) in force during each upgraded wait, "
		   "the thread's own back as soon as it returns (1ns to 1s); a thread whose own "
		   "is that or finer keeps it, and waits with one system call; `keep` leaves it "
		   "alone" },
	{ "log", "`quiet`, `warn` or `debug` (one line on stderr per decision, for diagnosis "
		 "only)" },
	{ "clamp", "the minimum wait given to a zero-timeout poll once the thread is in a busy "
		   "loop (`1ms`, `100us`; 1ns to 1s); readiness still ends the wait at once; "
		   "sub-ms values need epoll_pwait2, else round up to 1 ms; `off` disables" },
	{ "clamp-after", "empty zero-timeout polls in a row, on one thread, that make a busy "
			 "loop" },
	{ "clamp-gap", "polls count towards a busy loop only when the program comes back within "
		       "this time: a loop that runs its own work between polls (asyncio with "
		       "ready callbacks) is never clamped" },
	{ "adapt",
	  "`auto`: predict each call site's deadlines (about one wake-up per timer), leave "
	  "alone the 1 ms of loops that mean it, recognised by the code that calls epoll_wait "
	  "however late it was loaded (libuv: Node.js, uvloop, gevent's libuv loop; nginx, "
	  "libevent, Java NIO) or learned "
	  "from runs of 1 ms waits that end on a millisecond grid (tokio), and keep SUBMS "
	  "precision for a stream of 1 ms requests that never ends (libev or mio with C "
	  "callbacks, a plain ticker); `safe`: also leave alone every stream not shown to chase "
	  "sub-ms deadlines (a whole host or container); `off`: upgrade every rounded-up wait "
	  "in SUBMS steps" },
	{ "max-extra",
	  "the cost ceiling: wake-ups the library may add per second in a process (an early "
	  "wake-up after which the program asks the same again); past it, waits pass as asked, "
	  "or end at the earliest bound the program's requests set on its deadline, never later "
	  "than without the library; `off`: no limit. Hinted waits and the sites listed with "
	  "`--subms-callers` are not rationed" },
	{ "seccomp",
	  "what the library does under a seccomp filter in force when the program started (a "
	  "container runtime's default profile, systemd's `SystemCallFilter=`), whose content "
	  "cannot be read. `auto`: in a container (a PID namespace of its own: Docker, podman, "
	  "a Kubernetes pod) as `probe`, elsewhere as `safe`; `probe`: in the library's "
	  "constructor, before the program's own code runs, a child under the same filter tries "
	  "`epoll_pwait2` and the slack `prctl` (0.2-0.3 ms here; killed if silent for 200 ms, "
	  "the most it delays a start; reaped before the program runs; once per process, a fork "
	  "child keeps its parent's answer, and a program that it or its children exec under "
	  "the same filters takes it (handed in the environment); every wait "
	  "passes through if it was killed, refused "
	  "or silent); loaded with dlopen under a filter, which may be the program's own, `auto` "
	  "makes no child; "
	  "`safe`: never call either, no child: every wait passes through; `trust`: the filter "
	  "allows both. A filter that kills the process on `clone` itself kills it at the "
	  "probe: no runtime's default does (set `safe` there). Filters the program installs "
	  "itself are read before they are in force in every mode" },
	{ "genuine-callers",
	  "comma list of objects whose 1 ms waits are always left alone, as meant: a "
	  "library's file name (`libzmq.so.5`, or `libzmq.so` for any version), a directory in "
	  "its path (`gevent`: every gevent extension), a whole path, or the program's own "
	  "name (its executable's or the one it was started by); with `adapt=off` every "
	  "rounded-up wait is upgraded, listed or not" },
	{ "subms-callers",
	  "comma list of objects, named the same way, whose 1 ms waits are always upgraded as "
	  "rounded-up sub-ms requests, even when recognised, and never left alone by what is "
	  "learned (with `adapt=safe`: how to let one known sub-ms loop keep its precision); an "
	  "object in both lists is left alone" },
	{ "stats", "`1`: a report on stderr at exit; a path (`%p` becomes the pid): appended "
		   "there. Each process of a forking program reports once; never written by a "
		   "setuid, setgid or file-capability program" },
	{ "only", "comma list of program names (`/proc/self/comm` or the basename of argv[0]), "
		  "blanks around names ignored: act only in these. A program left alone pays "
		  "only the pass-through" },
	{ "skip", "act in every program but these; setting both ONLY and SKIP is an error and "
		  "leaves the program alone" },
	{ "go", "`auto`: when the command `epollfix` starts a Go program (a release it knows, "
		"Linux 5.8 or later; a stripped one too, its addresses read from its code), it also "
		"supervises it, so that the Go runtime's own "
		"sub-millisecond timers end on time instead of a millisecond late (doc/go.md); "
		"`off`: the library is preloaded only. Read by the command, not the library" },
	{ "config", "the system file to read instead of `SYSCONFDIR/epollfix.conf` "
		    "(`/usr/local/etc` for the default prefix, `/etc` for `/usr`); ignored in "
		    "secure execution" },
};

static const char *text_of(const struct ef_var *v)
{
	for (size_t i = 0; i < sizeof(prose) / sizeof(prose[0]); i++)
		if (strcmp(prose[i].name, v->name) == 0)
			return prose[i].text;
	fprintf(stderr, "ef-reference: %s has no text in doc/reference.c\n", v->env);
	exit(1);
}

/* Every text names a variable of the table, once. */
static void check_prose(void)
{
	for (size_t i = 0; i < sizeof(prose) / sizeof(prose[0]); i++) {
		const struct ef_var *v = ef_var_find(prose[i].name);
		int seen = 0;
		for (size_t k = 0; k < sizeof(prose) / sizeof(prose[0]); k++)
			seen += strcmp(prose[k].name, prose[i].name) == 0;
		if (!v || seen != 1) {
			fprintf(stderr, "ef-reference: doc/reference.c: '%s' %s\n", prose[i].name,
				v ? "has two texts" : "is not a variable of the table");
			exit(1);
		}
	}
}

static const char *default_of(const struct ef_var *v)
{
	static char text[256];
	struct ef_buf b = EF_BUF(text);
	ef_config_show_default(v, &b);
	return text;
}

/* The option as a user writes it: "--subms", "--stats[=FILE]". */
static int optional_arg(const struct ef_var *v)
{
	return v->arg && v->arg[0] == '[';
}

static int is_alias_target(const struct ef_var *v)
{
	return strcmp(v->name, EF_ALIAS_VAR) == 0;
}

/* ---- Markdown ---------------------------------------------------------------- */

static void md(void)
{
	puts("| variable | option | default | meaning |");
	puts("|---|---|---|---|");
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		const char *d = default_of(v);
		printf("| `%s` | `--%s%s`%s | ", v->env, v->name, optional_arg(v) ? v->arg : "",
		       is_alias_target(v) ? ", `--" EF_ALIAS_NAME "`" : "");
		printf(strcmp(d, "unset") == 0 ? "%s" : "`%s`", d);
		printf(" | %s |\n", text_of(v));
	}
}

/* ---- roff ------------------------------------------------------------------- */

/* Text as roff: backslashes escaped, `code` in bold with its hyphens as minus
 * signs (options), no line starting with a control character. */
static void roff(const char *s)
{
	int code = 0;
	if (*s == '.' || *s == '\'')
		fputs("\\&", stdout);
	for (; *s; s++) {
		if (*s == '`') {
			fputs(code ? "\\fR" : "\\fB", stdout);
			code = !code;
		} else if (*s == '\\') {
			fputs("\\e", stdout);
		} else if (*s == '-' && code) {
			fputs("\\-", stdout);
		} else {
			putchar(*s);
		}
	}
	if (code)
		fputs("\\fR", stdout);
}

static void roff_name(const char *s)
{
	for (; *s; s++)
		if (*s == '-')
			fputs("\\-", stdout);
		else
			putchar(*s);
}

static void man_options(void)
{
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		const char *arg = v->arg ? v->arg : "";
		puts(".TP");
		fputs("\\fB\\-\\-", stdout);
		roff_name(v->name);
		if (optional_arg(v))
			printf("\\fR[=\\fI%.*s\\fR]", (int)strcspn(arg + 2, "]"), arg + 2);
		else if (*arg == '=')
			printf("=\\fR\\fI%s\\fR", arg + 1);
		else
			fputs("\\fR", stdout);
		if (is_alias_target(v))
			fputs(", \\fB\\-\\-" EF_ALIAS_NAME "\\fR", stdout);
		printf("\n[\\fB%s\\fR, default %s]\n", v->env, default_of(v));
		const char *t = text_of(v);
		roff(t);
		puts(t[strlen(t) - 1] == '.' ? "" : ".");
	}
}

/* ---- the sample file --------------------------------------------------------- */

/* The text as '#' comment lines of at most 78 columns, code spans unmarked. */
static void comment(const char *text)
{
	char plain[2048];
	size_t n = 0;
	for (const char *s = text; *s && n + 2 < sizeof(plain); s++)
		if (*s != '`')
			plain[n++] = *s;
	if (n && plain[n - 1] != '.')
		plain[n++] = '.'; /* a comment ends its sentence */
	plain[n] = '\0';
	/* A sentence starts with a capital, unless with a value ("quiet, warn"). */
	if (*text != '`' && plain[0] >= 'a' && plain[0] <= 'z')
		plain[0] = (char)(plain[0] - 'a' + 'A');
	for (const char *p = plain; *p;) {
		size_t len = strlen(p), cut = len;
		if (len > 76) {
			cut = 76;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (!cut)
				cut = strcspn(p, " ");
		}
		printf("# %.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

static void conf_settings(void)
{
	int first = 1;
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		/* The file cannot name another file to read. */
		if (strcmp(v->name, "config") == 0)
			continue;
		if (!first)
			putchar('\n');
		first = 0;
		comment(text_of(v));
		if (v->kind == EF_KIND_TEXT)
			printf("# %s =%s%s\n", v->name, *v->text_def ? " " : "", v->text_def);
		else
			printf("# %s = %s\n", v->name, default_of(v));
	}
}

/* ---- templates ----------------------------------------------------------------- */

static void splice(const char *template, const char *marker, void (*insert)(void),
		   const char *version)
{
	FILE *f = fopen(template, "r");
	char line[4096];
	int done = 0;
	if (!f) {
		perror(template);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, marker)) {
			insert();
			done++;
			continue;
		}
		char *at;
		while (version && (at = strstr(line, "@VERSION@"))) {
			char rest[4096];
			snprintf(rest, sizeof(rest), "%s", at + 9);
			snprintf(at, sizeof(line) - (size_t)(at - line), "%s%s", version, rest);
		}
		fputs(line, stdout);
	}
	fclose(f);
	if (done != 1) {
		fprintf(stderr, "ef-reference: %s: %d lines hold %s, not one\n", template, done, marker);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	check_prose();
	for (size_t i = 0; i < ef_nvars; i++)
		text_of(&ef_vars[i]);
	if (argc == 2 && strcmp(argv[1], "md") == 0)
		md();
	else if (argc == 4 && strcmp(argv[1], "man") == 0)
		splice(argv[2], "@OPTIONS@", man_options, argv[3]);
	else if (argc == 3 && strcmp(argv[1], "conf") == 0)
		splice(argv[2], "@SETTINGS@", conf_settings, NULL);
	else {
		fputs("usage: ef-reference md | man TEMPLATE VERSION | conf TEMPLATE\n", stderr);
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
