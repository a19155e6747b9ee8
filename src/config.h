/* The policy's configuration: one table of variables drives the environment, the
 * runtime API's key=value words and the epollfix command's options, so every
 * entry point accepts and refuses exactly the same values. */
#ifndef EPOLLFIX_CONFIG_H
#define EPOLLFIX_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "fmt.h"

enum ef_log { EF_LOG_QUIET, EF_LOG_WARN, EF_LOG_DEBUG };

/* Only int64_t members: state.c publishes it word by word under a seqlock. */
struct ef_config {
	int64_t disable;     /* 1: every call passes through untouched */
	int64_t subms_ns;    /* wait that replaces a rounded-up 1 ms; 0 = off */
	int64_t max_ms;      /* timeouts 1..max_ms count as rounded-up */
	int64_t slack_ns;    /* timer slack while an upgraded wait sleeps; -1 = keep */
	int64_t log;         /* enum ef_log */
	int64_t clamp_ns;    /* minimum wait of a busy zero-timeout loop; 0 = off */
	int64_t clamp_after; /* empty zero-timeout polls in a row that make a busy loop */
	int64_t clamp_gap_ns; /* the most time between two polls of one busy loop */
	int64_t adapt;        /* 1: leave alone the 1 ms of loops that mean it */
};

enum ef_kind { EF_KIND_DURATION, EF_KIND_INT, EF_KIND_WORD };

struct ef_word {
	const char *word;
	int64_t value;
};

struct ef_var {
	const char *name; /* runtime key and command option: "subms" */
	const char *env;  /* "EPOLLFIX_SUBMS" */
	enum ef_kind kind;
	size_t offset;    /* of the int64_t member in struct ef_config */
	int64_t min, max; /* DURATION (ns) and INT */
	int64_t fallback; /* used when the value is refused */
	const struct ef_word *words; /* special words, NULL-terminated; WORD: the only ones */
	const char *help;
};

extern const struct ef_var ef_vars[];
extern const size_t ef_nvars;

void ef_config_defaults(struct ef_config *c);

/* By runtime name ("subms") or variable ("EPOLLFIX_SUBMS"); NULL if unknown. */
const struct ef_var *ef_var_find(const char *name);

int64_t ef_config_get(const struct ef_config *c, const struct ef_var *v);

/* Sets v from text. On refusal c is unchanged, -1 is returned and msg receives
 * "EPOLLFIX_SUBMS='abc' is not a duration (like 50us)". */
int ef_config_set(struct ef_config *c, const struct ef_var *v, const char *value,
		  struct ef_buf *msg);

/* v's value in c, written as a user would write it ("50us", "off", "keep"). */
void ef_config_show(int64_t value, const struct ef_var *v, struct ef_buf *out);

/* Reads every variable through get (getenv). Each refused value gives one line,
 * "epollfix: EPOLLFIX_X='v' <why>; using <fallback>\n", handed to warn unless
 * EPOLLFIX_LOG is quiet. Empty values count as unset. */
void ef_config_from_env(struct ef_config *c, const char *(*get)(const char *name),
			void (*warn)(const struct ef_buf *line));

/* EPOLLFIX_ONLY / EPOLLFIX_SKIP: is this program named in the comma list? A
 * name matches /proc/self/comm or the basename of argv[0] exactly; the kernel
 * cuts comm at 15 characters, so longer names match through argv[0]. Empty
 * items are ignored. */
int ef_name_listed(const char *list, const char *comm, const char *argv0);

/* Whether the library acts in this program, from EPOLLFIX_ONLY and
 * EPOLLFIX_SKIP (NULL or "" when unset). Setting both is a configuration error:
 * msg receives the warning and the answer is 0, the safe side. */
int ef_program_selected(const char *only, const char *skip, const char *comm,
			const char *argv0, struct ef_buf *msg);

#endif
