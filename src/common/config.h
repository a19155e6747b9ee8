/* The policy's configuration: one table of variables drives the environment, the
 * system file, the runtime API's key=value words and the epollfix command's
 * options, so every entry point accepts and refuses exactly the same values. */
#ifndef EPOLLFIX_CONFIG_H
#define EPOLLFIX_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "fmt.h"
#include "log.h" /* enum ef_log */

/* EPOLLFIX_ADAPT */
enum ef_adapt { EF_ADAPT_OFF, EF_ADAPT_AUTO, EF_ADAPT_SAFE };
/* EPOLLFIX_SECCOMP */
enum ef_seccomp { EF_SECCOMP_SAFE, EF_SECCOMP_TRUST, EF_SECCOMP_AUTO, EF_SECCOMP_PROBE };
/* EPOLLFIX_GO */
enum ef_go { EF_GO_OFF, EF_GO_AUTO };

enum ef_kind { EF_KIND_DURATION, EF_KIND_INT, EF_KIND_WORD, EF_KIND_TEXT };

/* Every variable, once. The X-macro generates struct ef_config and struct
 * ef_text, the table ef_vars (names, defaults, fallbacks, limits, help) and so
 * the command's options and help. Adding a variable is adding a row.
 *
 * NUM(member, ENV, name, kind, min, max, default, fallback, words, arg, help)
 *   an int64_t in struct ef_config; min and max bound DURATION (ns) and INT;
 *   fallback replaces a refused value; words are accepted besides numbers
 *   (WORD: the only values).
 * TEXT(member, ENV, name, size, min_len, default, fallback, bare, arg, help)
 *   a char[size] in struct ef_text, read once at start-up and not changeable at
 *   run time; bare is the value of the option given without '=' (NULL: the
 *   option needs a value).
 *
 * The extra option --off means --disable=1 (EF_ALIAS_* below). */
#define EF_CONFIG_TABLE(NUM, TEXT)                                                               \
	NUM(disable, DISABLE, "disable", WORD, 0, 1, 0,                                          \
	    1 /* someone who tried to disable the library wants it off */, ef_bool_words, "=0|1", \
	    "1: every call passes through untouched")                                           \
	NUM(subms_ns, SUBMS, "subms", DURATION, 1, EF_NS_PER_MS, 50 * EF_NS_PER_US,              \
	    50 * EF_NS_PER_US, ef_off_word, "=VALUE",                                             \
	    "the wait that replaces a 1 ms timeout judged rounded-up; off disables upgrades")     \
	NUM(max_ms, MAX_MS, "max-ms", INT, 1, 1000, 1, 1, NULL, "=VALUE",                        \
	    "timeouts of 1..N ms count as rounded-up; T ms then waits (T-1) ms + SUBMS")          \
	NUM(slack_ns, SLACK, "slack", DURATION, 1, EF_NS_PER_S, 1 * EF_NS_PER_US,                \
	    1 * EF_NS_PER_US, ef_keep_word, "=VALUE",                                             \
	    "timer slack during runs of upgraded waits; keep leaves the thread's own")          \
	NUM(log, LOG, "log", WORD, 0, 2, EF_LOG_WARN, EF_LOG_WARN, ef_log_words, "=VALUE",       \
	    "quiet, warn or debug (one line per decision, for diagnosis only)")                  \
	NUM(clamp_ns, CLAMP, "clamp", DURATION, 1, EF_NS_PER_S, 0, 0, ef_off_word, "=VALUE",     \
	    "minimum wait given to a zero-timeout poll in a busy loop; off disables")             \
	NUM(clamp_after, CLAMP_AFTER, "clamp-after", INT, 1, 1000000000, 16, 16, NULL, "=VALUE", \
	    "empty zero-timeout polls in a row, on one thread, that make a busy loop")            \
	NUM(clamp_gap_ns, CLAMP_GAP, "clamp-gap", DURATION, 1, EF_NS_PER_S, 1 * EF_NS_PER_US,    \
	    1 * EF_NS_PER_US, NULL, "=VALUE",                                                     \
	    "polls count as one busy loop only if the program came back within this time")       \
	NUM(adapt, ADAPT, "adapt", WORD, EF_ADAPT_OFF, EF_ADAPT_SAFE, EF_ADAPT_AUTO, EF_ADAPT_AUTO, \
	    ef_adapt_words, "=VALUE",                                                            \
	    "auto: predict each call site's deadlines, leave alone the 1 ms of loops that mean "  \
	    "it (libuv, nginx, libevent, Java, or learned), keep precision where it cannot tell; " \
	    "safe: also leave alone every stream not shown to be sub-ms (a whole host); "         \
	    "off: upgrade every rounded-up wait by SUBMS steps")                                 \
	NUM(max_extra, MAX_EXTRA, "max-extra", INT, 1, 1000000, 1000, 1000, ef_off_word, "=VALUE",  \
	    "wake-ups the library may add per second in a process (early wake-ups the "         \
	    "program asks the same again after); past it waits pass as asked; off: no limit")   \
	NUM(seccomp, SECCOMP, "seccomp", WORD, 0, 3, EF_SECCOMP_AUTO,                            \
	    EF_SECCOMP_SAFE /* a value not understood: no child, no call a filter could kill */,  \
	    ef_seccomp_words, "=VALUE",                                                          \
	    "under a seccomp filter in force at start, whose content cannot be read: auto: in a " \
	    "container ask a child whether it allows epoll_pwait2 and timer slack, elsewhere as " \
	    "safe; probe: ask a child everywhere; safe: never call either; trust: it allows both") \
	NUM(go, GO, "go", WORD, EF_GO_OFF, EF_GO_AUTO, EF_GO_AUTO, EF_GO_AUTO, ef_go_words,       \
	    "=auto|off",                                                                          \
	    "auto: a Go program the command starts is also supervised, so the Go runtime's own " \
	    "sub-ms timers end on time (doc/go.md); off: preloaded only")                        \
	/* Lists of objects: a library's file name (libzmq.so.5, or libzmq.so for any        \
	 * version), a directory in its path (gevent), a path, or the program's name. */      \
	TEXT(genuine_callers, GENUINE_CALLERS, "genuine-callers", EF_LIST_SIZE, 1, "", "", NULL, \
	     "=NAME[,NAME...]",                                                                  \
	     "leave alone the 1 ms waits of these objects (libzmq.so, gevent, the program)")     \
	TEXT(subms_callers, SUBMS_CALLERS, "subms-callers", EF_LIST_SIZE, 1, "", "", NULL,      \
	     "=NAME[,NAME...]",                                                                  \
	     "always upgrade the 1 ms waits of these objects, even recognised ones")             \
	/* Longer than PATH_MAX could not be opened anyway: report on stderr instead. */         \
	TEXT(stats, STATS, "stats", EF_PATH_SIZE, 0, "", "1", "1", "[=FILE]",                    \
	     "report at exit: 1 to stderr, or appended to FILE (%p: the pid)")                    \
	TEXT(only, ONLY, "only", EF_LIST_SIZE, 1, "", "", NULL, "=NAME[,NAME...]",               \
	     "act only in these programs (/proc/self/comm or argv[0]'s basename)")                \
	TEXT(skip, SKIP, "skip", EF_LIST_SIZE, 1, "", "", NULL, "=NAME[,NAME...]",               \
	     "act in every program but these; setting both ONLY and SKIP leaves every program alone") \
	TEXT(config, CONFIG, "config", EF_PATH_SIZE, 1, "", "", NULL, "=FILE",                   \
	     "the system file to read instead of " EF_SYSCONF_FILE "; ignored in secure execution")

/* The system configuration file: meson's sysconfdir (/usr/local/etc for the
 * default prefix, /etc for /usr). */
#ifndef EF_SYSCONF_FILE
#define EF_SYSCONF_FILE "/etc/epollfix.conf"
#endif

#define EF_ALIAS_NAME "off"
#define EF_ALIAS_VAR "disable"
#define EF_ALIAS_VALUE "1"

#define EF_NS_PER_US 1000LL
#define EF_NS_PER_MS 1000000LL
#define EF_NS_PER_S 1000000000LL
#define EF_PATH_SIZE 4096
#define EF_LIST_SIZE 4096

#define EF_NUM_MEMBER(member, ...) int64_t member;
#define EF_TEXT_MEMBER(member, ENV, name, size, ...) char member[size];
#define EF_SKIP_ROW(...)

/* Each variable's index in ef_vars: EF_VAR_subms_ns; EF_NVARS in all. */
#define EF_VAR_INDEX(member, ...) EF_VAR_##member,
enum { EF_CONFIG_TABLE(EF_VAR_INDEX, EF_VAR_INDEX) EF_NVARS };

/* Where each setting came from: the default, a line of the system file, or the
 * environment. */
enum ef_from { EF_FROM_DEFAULT, EF_FROM_FILE, EF_FROM_ENV };
struct ef_origin {
	unsigned char from[EF_NVARS]; /* enum ef_from */
	unsigned line[EF_NVARS];      /* EF_FROM_FILE: the line's number */
};

/* Only int64_t members: state.c publishes it word by word under a seqlock. */
struct ef_config {
	EF_CONFIG_TABLE(EF_NUM_MEMBER, EF_SKIP_ROW)
};

/* The text settings: read once at start-up, kept apart from the published
 * words, which the wait path copies. */
struct ef_text {
	EF_CONFIG_TABLE(EF_SKIP_ROW, EF_TEXT_MEMBER)
};

struct ef_word {
	const char *word;
	int64_t value;
};

struct ef_var {
	const char *name; /* runtime key and command option: "subms" */
	const char *env;  /* "EPOLLFIX_SUBMS" */
	enum ef_kind kind;
	size_t offset;    /* of the member in struct ef_config, or TEXT: struct ef_text */
	size_t size;      /* TEXT: the array's size */
	int64_t min, max; /* DURATION (ns) and INT; TEXT: min is the least length */
	int64_t def;      /* when unset */
	int64_t fallback; /* used when the value is refused */
	const char *text_def, *text_fallback; /* TEXT */
	const char *bare; /* TEXT: the option without '='; NULL: it needs a value */
	const struct ef_word *words; /* special words, NULL-terminated; WORD: the only ones */
	const char *arg;  /* the option's argument in the help: "=VALUE", "[=FILE]" */
	const char *help;
};

extern const struct ef_var ef_vars[];
extern const size_t ef_nvars;

/* The table's defaults. */
void ef_config_defaults(struct ef_config *c);
void ef_text_defaults(struct ef_text *t);

/* By runtime name ("subms") or variable ("EPOLLFIX_SUBMS"); NULL if unknown. */
const struct ef_var *ef_var_find(const char *name);

/* v's value in c; 0 for TEXT variables, which live in struct ef_text. */
int64_t ef_config_get(const struct ef_config *c, const struct ef_var *v);
const char *ef_text_get(const struct ef_text *t, const struct ef_var *v);

/* Sets v from text. On refusal c is unchanged, -1 is returned and msg receives
 * "EPOLLFIX_SUBMS='abc' is not a duration (like 50us)". A TEXT variable is
 * refused: it is set only at start-up, through ef_text_set. */
int ef_config_set(struct ef_config *c, const struct ef_var *v, const char *value,
		  struct ef_buf *msg);
/* The same for a TEXT variable: refused when too long or too short. */
int ef_text_set(struct ef_text *t, const struct ef_var *v, const char *value,
		struct ef_buf *msg);

/* v's value in c, written as a user would write it ("50us", "off", "keep"). */
void ef_config_show(int64_t value, const struct ef_var *v, struct ef_buf *out);
/* v's default, as the help shows it ("50us"; "unset" for an empty TEXT). */
void ef_config_show_default(const struct ef_var *v, struct ef_buf *out);

/* Reads every variable through get (getenv); t, when not NULL, receives the
 * TEXT ones. Each refused value gives one warning through ef_log (log.h),
 * "epollfix: EPOLLFIX_X='v' <why>; using <fallback>\n", unless EPOLLFIX_LOG is
 * quiet: the log gate's level is set from EPOLLFIX_LOG before the others are
 * read. Empty values count as unset. */
void ef_config_from_env(struct ef_config *c, struct ef_text *t,
			const char *(*get)(const char *name));

/* The same over whatever c and t hold already (the system file's values), each
 * setting found noted in o (may be NULL). */
void ef_config_apply_env(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
			 const char *(*get)(const char *name));

/* The system file's text (len bytes, need not end in a NUL) over c and t:
 * "key = value" lines with the runtime names (subms = 20us, only = nginx),
 * '#' comments, blank lines. A bad line gives one warning through ef_log,
 * unless the log gate is quiet already or the file says log = quiet, and its
 * variable's fallback:
 *   "epollfix: FILE:3: 'subms = abc' is not a duration (like 50us); using 50us\n"
 * Lines that are not settings are ignored with a warning. */
void ef_config_from_file(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
			 const char *file, const char *text, size_t len);

/* Where v's value came from: "default", "FILE:3" or "environment (EPOLLFIX_X)". */
void ef_config_show_origin(const struct ef_origin *o, const struct ef_var *v, const char *file,
			   struct ef_buf *out);

/* EPOLLFIX_ONLY / EPOLLFIX_SKIP: is this program named in the comma list? A
 * name matches /proc/self/comm or the basename of argv[0] exactly; the kernel
 * cuts comm at 15 characters, so longer names match through argv[0]. Items
 * are read as every list is (ef_list_next): blanks around them and empty ones
 * are ignored. */
int ef_name_listed(const char *list, const char *comm, const char *argv0);

/* Whether the library acts in this program, from EPOLLFIX_ONLY and
 * EPOLLFIX_SKIP (NULL or "" when unset). Setting both is a configuration error:
 * msg receives the warning and the answer is 0, the safe side. */
int ef_program_selected(const char *only, const char *skip, const char *comm,
			const char *argv0, struct ef_buf *msg);

#endif
