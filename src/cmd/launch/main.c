/* The epollfix command: `epollfix [options] [--] command [args...]` sets the
 * EPOLLFIX_* variables from its options, puts libepollfix.so in front of
 * LD_PRELOAD and execs the command, like eatmydata or faketime. Options are the
 * library's variables (config.c's table), checked by the library's parser. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef EF_HAVE_BPF
#include "agent.h"
#endif
#include "config.h"
#include "copy.h"
#include "epollfix.h"
#include "goimage.h"
#include "golaunch.h"
#include "live.h"
#include "report.h"
#include "sandbox.h"
#include "status.h"
#include "sysconf.h"
#include "target.h"

#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out, "usage: epollfix [options] [--] command [args...]\n"
		     "       epollfix --check [options] [PROGRAM]\n"
		     "       epollfix status [--json] [--watch[=1s]] [PID]\n"
		     "       epollfix copy-files DEST\n"
		     "       epollfix agent [--all | --path=PREFIX | --cgroup=PATH | --unit=NAME | --pods]... | --check\n"
		     "       epollfix attach PID\n\n"
		     "Runs command with libepollfix.so preloaded: epoll waits of a rounded-up\n"
		     "millisecond become sub-millisecond waits (epoll_pwait2).\n\n"
		     "Options (each sets the variable in brackets; the default in parentheses):\n");
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		char def[64], opt[64];
		struct ef_buf b = EF_BUF(def), o = EF_BUF(opt);
		ef_config_show_default(v, &b);
		ef_fmt(&o, "--%s%s", v->name, v->arg);
		fprintf(out, "  %-22s [%s] (%s)\n      %s\n", opt, v->env, def, v->help);
	}
	fprintf(out, "  --%-20s [%s=%s] the same as --%s=%s\n", EF_ALIAS_NAME,
		ef_var_find(EF_ALIAS_VAR)->env, EF_ALIAS_VALUE, EF_ALIAS_VAR, EF_ALIAS_VALUE);
	fprintf(out, "  --check [PROGRAM]      say whether epoll_pwait2 works here, and the policy;\n"
		     "                         with PROGRAM, whether the library can act in it\n"
		     "  --help, --version\n\n"
		     "Durations: a number and a unit, ns, us, ms or s (50us, 0.05ms).\n\n"
		     "epollfix status: one line per running process with the library loaded;\n"
		     "with PID, its report now (the exit report's text).\n"
		     "epollfix copy-files DEST: copies the image's files (glibc/, musl/ and bin/\n"
		     "above this command's bin/) into DEST, for an init container. See epollfix(1).\n");
}

/* What the search for the library found for a program. */
enum found {
	LIB_FOUND,	 /* the path */
	LIB_NOT_NEEDED,	 /* a statically linked program, given none */
	LIB_MISSING,	 /* the path last tried */
};

/* Each path the search tried and why it was not taken, for the message when
 * none was: a user whose image mount or install is broken sees what failed,
 * not only the last place looked. */
static char tried_text[2048];
static struct ef_buf tried = EF_BUF(tried_text);

/* path, when it is a readable file. */
static int try_path(char *out, size_t size, const char *dir, const char *rest)
{
	if ((size_t)snprintf(out, size, "%s/%s", dir, rest) >= size) {
		ef_fmt(&tried, "\n  %s/%s: path too long", dir, rest);
		return 0;
	}
	if (access(out, R_OK) == 0)
		return 1;
	ef_fmt(&tried, "\n  %s: %s", out, strerror(errno));
	return 0;
}

/* The library for the program at path (NULL: none named), in order:
 * - beside this executable: a build tree;
 * - the container image's tree (deploy/image), wherever it is mounted: this
 *   executable in bin/, glibc/ and musl/ beside it, each a build for its
 *   libc, the one the program's loader can load taken (the other stops it
 *   from starting). A statically linked program is given none: no loader of
 *   its own reads LD_PRELOAD, and the libc of the programs it starts is not
 *   known, nor is one build right for them all;
 * - where meson installed it, relative to bindir, then its absolute path.
 * A statically linked program needs none: when none is found, it runs without. */
static enum found search_library(const char *path, char *out, size_t size)
{
	char exe[PATH_MAX];
	enum ef_libc libc = path ? ef_target_libc(path) : EF_LIBC_UNKNOWN;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		ef_fmt(&tried, "\n  beside this command: /proc/self/exe: %s",
		       n < 0 ? strerror(errno) : "empty");
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		*slash = '\0';
		if (try_path(out, size, exe, "libepollfix.so"))
			return LIB_FOUND;
		slash = strrchr(exe, '/');
		if (slash && strcmp(slash, "/bin") == 0) {
			char tree[PATH_MAX], glibc[PATH_MAX], musl[PATH_MAX];
			snprintf(tree, sizeof(tree), "%.*s", (int)(slash - exe), exe);
			int has_glibc = try_path(glibc, sizeof(glibc), tree, "glibc/libepollfix.so");
			int has_musl = try_path(musl, sizeof(musl), tree, "musl/libepollfix.so");
			if (has_glibc || has_musl) {
				if (libc == EF_LIBC_STATIC)
					return LIB_NOT_NEEDED;
				int want_musl = libc == EF_LIBC_MUSL || (libc == EF_LIBC_UNKNOWN && !has_glibc);
				snprintf(out, size, "%s", want_musl ? musl : glibc);
				return (want_musl ? has_musl : has_glibc) ? LIB_FOUND : LIB_MISSING;
			}
		}
		if (try_path(out, size, exe, EF_BINDIR_TO_LIBDIR "/libepollfix.so"))
			return LIB_FOUND;
	}
	if (try_path(out, size, EF_LIBDIR, "libepollfix.so"))
		return LIB_FOUND;
	return libc == EF_LIBC_STATIC ? LIB_NOT_NEEDED : LIB_MISSING;
}

/* The path found, made canonical: LD_PRELOAD and --check show a plain path. */
static enum found find_library(const char *path, char *out, size_t size)
{
	char real[PATH_MAX];
	enum found f = search_library(path, out, size);
	if (f == LIB_FOUND && realpath(out, real) && strlen(real) < size)
		strcpy(out, real);
	return f;
}

/* The system file the library at lib reads (its EF_NOTE_CONFIG_FILE note):
 * a build of the command for another libc has another default. */
static char lib_config[PATH_MAX];

static void library_config(const char *lib)
{
	struct ef_file e;
	uint8_t path[PATH_MAX];
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	long n = fd >= 0 && ef_file_open(fd, &e) == 0
			 ? ef_file_note(&e, EF_NOTE_OWNER, EF_NOTE_CONFIG_FILE, path, sizeof(path))
			 : -1;
	if (fd >= 0)
		close(fd);
	/* A path, whole, NUL-terminated where the note ends. */
	if (n > 1 && (size_t)n <= sizeof(path) && path[0] == '/' && path[n - 1] == '\0' &&
	    strlen((char *)path) == (size_t)n - 1)
		memcpy(lib_config, path, (size_t)n);
}

/* The configuration as the library would load it: its own system file. */
static enum ef_file_state load_config(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
				      const char **file)
{
	return ef_config_load_from(c, t, o, file, *lib_config ? lib_config : EF_SYSCONF_FILE,
				   (const char *(*)(const char *))getenv);
}

/* LD_PRELOAD with the library first, unless it is already listed. */
static void prepend_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", lib, 1);
		return;
	}
	size_t n = strlen(lib);
	for (const char *p = old; (p = strstr(p, lib)); p += n)
		if ((p == old || p[-1] == ':' || p[-1] == ' ') && (p[n] == '\0' || p[n] == ':' || p[n] == ' '))
			return;
	char *both = malloc(n + strlen(old) + 2);
	if (!both) {
		perror("epollfix");
		exit(EXIT_USAGE);
	}
	sprintf(both, "%s:%s", lib, old);
	setenv("LD_PRELOAD", both, 1);
}

/* What the library would find in a program started from here, under the
 * same sandbox: 0 when epoll_pwait2 works, else why not (ef_pwait2_why). The
 * library's own plan and probe: a filter that kills on epoll_pwait2 ends the
 * probe alone (the command is no host: under a filter that kills clone,
 * --check dies). */
static int pwait2_check(const struct ef_config *c)
{
	int why = ef_seccomp_plan((int)c->seccomp, ef_seccomp_status_via(syscall), syscall);
	unsigned denied;

	fflush(NULL);
	return why == EF_PLAN_ASK || why == EF_PLAN_PROBE ? ef_probe_run(syscall, c->slack_ns, &denied)
							  : why;
}

static int check(const char *lib, enum found found)
{
	struct utsname u;
	struct ef_config c;
	static struct ef_text t;
	static struct ef_origin o;
	const char *file;
	char text[512];
	struct ef_buf policy = EF_BUF(text);
	int why;

	uname(&u);
	enum ef_file_state fs =
		load_config(&c, &t, &o, &file);
	ef_policy_line(&c, &policy);
	why = pwait2_check(&c);
	int works = why == 0;
	char reason[160];
	ef_pwait2_why(why, &EF_BUF(reason));
	printf("epollfix %s\n", EPOLLFIX_VERSION);
	if (found == LIB_NOT_NEEDED)
		printf("library:      none: a statically linked program loads none\n");
	else
		printf("library:      %s%s\n", lib, found == LIB_FOUND ? "" : " (missing)");
	printf("kernel:       %s %s (epoll_pwait2 needs 5.11 or later)\n", u.sysname, u.release);
	printf("epoll_pwait2: %s%s\n", works ? "works" : "no: ", works ? "" : reason);
	printf("policy:       %s\n", text);
	printf("stats:        %s\n", *t.stats ? t.stats : "off");
	if (*t.only)
		printf("programs:     only %s\n", t.only);
	else if (*t.skip)
		printf("programs:     all but %s\n", t.skip);
	else
		printf("programs:     all\n");
	printf("config file:  %s (%s)\n", file,
	       fs == EF_FILE_READ ? "read" : fs == EF_FILE_MISSING ? "none" : "ignored");
	printf("settings:\n");
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		char value[64], from[EF_PATH_SIZE + 64];
		struct ef_buf vb = EF_BUF(value), fb = EF_BUF(from);
		if (v->kind == EF_KIND_TEXT)
			ef_fmt(&vb, "%s", *ef_text_get(&t, v) ? ef_text_get(&t, v) : "unset");
		else
			ef_config_show(ef_config_get(&c, v), v, &vb);
		ef_config_show_origin(&o, v, file, &fb);
		printf("  %-12s %-14s %s\n", v->name, value, from);
	}
	return works && found != LIB_MISSING ? 0 : 1;
}

/* The variable an option sets, and its value: --name=VALUE, --name VALUE, a
 * TEXT variable's --name alone (its bare value), or the alias --off. *value is
 * NULL when the value is missing; NULL is returned for an unknown option. */
static const struct ef_var *option(const char *arg, const char **value, int *i, int argc,
				   char **argv)
{
	const char *name = arg + 2, *eq = strchr(name, '=');
	size_t n = eq ? (size_t)(eq - name) : strlen(name);

	if (!eq && strcmp(name, EF_ALIAS_NAME) == 0) {
		*value = EF_ALIAS_VALUE;
		return ef_var_find(EF_ALIAS_VAR);
	}
	for (size_t k = 0; k < ef_nvars; k++) {
		const struct ef_var *v = &ef_vars[k];
		if (strlen(v->name) != n || strncmp(name, v->name, n) != 0)
			continue;
		*value = eq ? eq + 1 : v->bare ? v->bare : *i + 1 < argc ? argv[++*i] : NULL;
		return v;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct ef_config scratch;
	static struct ef_text scratch_text;
	int i, want_check = 0;

	if (argc > 1 && strcmp(argv[1], "status") == 0)
		return ef_status_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "copy-files") == 0)
		return ef_copy_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "go-image") == 0) /* for the tests: goimage.h */
		return ef_go_image_main(argc - 1, argv + 1);
	if (argc > 1 && (strcmp(argv[1], "agent") == 0 || strcmp(argv[1], "attach") == 0)) {
#ifdef EF_HAVE_BPF
		return ef_agent_main(argc - 1, argv + 1);
#else
		fprintf(stderr, "epollfix %s: this epollfix was built without its BPF side "
				"(meson -Dbpf: clang 15 or later, bpftool, libbpf)\n",
			argv[1]);
		return EXIT_USAGE;
#endif
	}
	ef_config_defaults(&scratch);
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		const char *arg = argv[i], *value;
		const struct ef_var *v = NULL;

		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(arg, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(arg, "--version") == 0) {
			printf("epollfix %s\n", EPOLLFIX_VERSION);
			return 0;
		}
		if (strcmp(arg, "--check") == 0) {
			want_check = 1;
			continue;
		}
		v = option(arg, &value, &i, argc, argv);
		if (!v) {
			fprintf(stderr, "epollfix: unknown option %s (see epollfix --help)\n", arg);
			return EXIT_USAGE;
		}
		char text[512];
		struct ef_buf msg = EF_BUF(text);
		if ((v->kind == EF_KIND_TEXT ? ef_text_set(&scratch_text, v, value ? value : "", &msg)
					     : ef_config_set(&scratch, v, value ? value : "", &msg)) != 0) {
			fprintf(stderr, "epollfix: --%s: %s\n", v->name, text);
			return EXIT_USAGE;
		}
		setenv(v->env, value, 1);
	}
	if (getenv("EPOLLFIX_ONLY") && *getenv("EPOLLFIX_ONLY") && getenv("EPOLLFIX_SKIP") &&
	    *getenv("EPOLLFIX_SKIP")) {
		fprintf(stderr, "epollfix: EPOLLFIX_ONLY and EPOLLFIX_SKIP cannot both be set\n");
		return EXIT_USAGE;
	}

	/* The library that fits the program, if it needs one. */
	char lib[2 * PATH_MAX], path[PATH_MAX];
	int resolved = i < argc && ef_resolve_program(argv[i], path, sizeof(path)) == 0;
	enum found found = find_library(resolved ? path : NULL, lib, sizeof(lib));
	if (found == LIB_FOUND)
		library_config(lib);
	/* A Go program is supervised as well (gosup.h), unless --go=off. */
	char go_text[1024] = "";
	struct ef_buf go_line = EF_BUF(go_text);
	int supervise = 0;
	static struct ef_text go_t;
	struct ef_config go_c;
	struct ef_origin go_o;
	const char *go_file;
	/* A value not understood is warned about by the one parser, and auto used. */
	load_config(&go_c, &go_t, &go_o, &go_file);
	int go_on = go_c.go != EF_GO_OFF;
	if (resolved && go_on)
		supervise = ef_go_plan(path, &go_line);
	if (want_check) {
		int r = check(lib, found);
		return i < argc && ef_target_check(argv[i], 0, go_on ? go_text : NULL, supervise) != 0 ? 1
														: r;
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (found == LIB_MISSING) {
		fprintf(stderr, "epollfix: cannot find libepollfix.so; tried:%s\n", tried_text);
		return EXIT_USAGE;
	}
	/* The command still runs: a warning only, unless the log is quiet. */
	const char *log = getenv("EPOLLFIX_LOG");
	if (!log || strcmp(log, "quiet") != 0)
		ef_target_check(argv[i], 1, !go_on ? NULL : supervise ? "" : go_text, supervise);
	if (found == LIB_FOUND)
		prepend_preload(lib);
	if (supervise)
		ef_go_launch(getenv("EPOLLFIX_STATS"));
	execvp(argv[i], argv + i);
	int err = errno;
	fprintf(stderr, "epollfix: %s: %s\n", argv[i],
		err == ENOENT ? "command not found" : strerror(err));
	return err == ENOENT ? 127 : 126;
}
