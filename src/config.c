#include "config.h"

#include <string.h>

#include "parse.h"

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

static const struct ef_word off_word[] = { { "off", 0 }, { NULL, 0 } };
static const struct ef_word keep_word[] = { { "keep", -1 }, { NULL, 0 } };
static const struct ef_word log_words[] = {
	{ "quiet", EF_LOG_QUIET }, { "warn", EF_LOG_WARN }, { "debug", EF_LOG_DEBUG }, { NULL, 0 }
};
static const struct ef_word bool_words[] = { { "0", 0 }, { "1", 1 }, { NULL, 0 } };
static const struct ef_word adapt_words[] = { { "off", 0 }, { "auto", 1 }, { "safe", 2 }, { NULL, 0 } };

#define FIELD(m) offsetof(struct ef_config, m)

const struct ef_var ef_vars[] = {
	{ "disable", "EPOLLFIX_DISABLE", EF_KIND_WORD, FIELD(disable), 0, 1,
	  /* someone who tried to disable the library wants it off */ 1, bool_words,
	  "1: every call passes through untouched" },
	{ "subms", "EPOLLFIX_SUBMS", EF_KIND_DURATION, FIELD(subms_ns), 1, NS_PER_MS,
	  50 * NS_PER_US, off_word,
	  "the wait that replaces a 1 ms timeout judged rounded-up; off disables upgrades" },
	/* At most 4095: state.c packs MAX_MS into 12 bits of its fast word. */
	{ "max-ms", "EPOLLFIX_MAX_MS", EF_KIND_INT, FIELD(max_ms), 1, 1000, 1, NULL,
	  "timeouts of 1..N ms count as rounded-up; T ms then waits (T-1) ms + SUBMS" },
	{ "slack", "EPOLLFIX_SLACK", EF_KIND_DURATION, FIELD(slack_ns), 1, NS_PER_S,
	  1 * NS_PER_US, keep_word,
	  "timer slack while an upgraded wait sleeps, restored after; keep leaves it alone" },
	{ "log", "EPOLLFIX_LOG", EF_KIND_WORD, FIELD(log), 0, 2, EF_LOG_WARN, log_words,
	  "quiet, warn or debug (one line per decision, for diagnosis only)" },
	{ "clamp", "EPOLLFIX_CLAMP", EF_KIND_DURATION, FIELD(clamp_ns), 1, NS_PER_S, 0, off_word,
	  "minimum wait given to a zero-timeout poll in a busy loop; off disables" },
	{ "clamp-after", "EPOLLFIX_CLAMP_AFTER", EF_KIND_INT, FIELD(clamp_after), 1, 1000000000,
	  16, NULL, "empty zero-timeout polls in a row, on one thread, that make a busy loop" },
	{ "clamp-gap", "EPOLLFIX_CLAMP_GAP", EF_KIND_DURATION, FIELD(clamp_gap_ns), 1, NS_PER_S,
	  1 * NS_PER_US, NULL,
	  "polls count as one busy loop only if the program came back within this time" },
	{ "adapt", "EPOLLFIX_ADAPT", EF_KIND_WORD, FIELD(adapt), 0, 2, 1, adapt_words,
	  "auto: predict each call site's deadlines, leave alone the 1 ms of loops that mean it "
	  "(libuv, nginx, libevent, Java, or learned), keep precision where it cannot tell; "
	  "safe: also leave alone every stream not shown to be sub-ms (a whole host); "
	  "off: upgrade every rounded-up wait by SUBMS steps" },
};
const size_t ef_nvars = sizeof(ef_vars) / sizeof(ef_vars[0]);

void ef_config_defaults(struct ef_config *c)
{
	for (size_t i = 0; i < ef_nvars; i++)
		*(int64_t *)((char *)c + ef_vars[i].offset) = ef_vars[i].fallback;
	c->disable = 0;
}

const struct ef_var *ef_var_find(const char *name)
{
	for (size_t i = 0; name && i < ef_nvars; i++)
		if (strcmp(name, ef_vars[i].name) == 0 || strcmp(name, ef_vars[i].env) == 0)
			return &ef_vars[i];
	return NULL;
}

int64_t ef_config_get(const struct ef_config *c, const struct ef_var *v)
{
	return *(const int64_t *)((const char *)c + v->offset);
}

static void show_range(const struct ef_var *v, struct ef_buf *out)
{
	ef_str(out, " (");
	if (v->kind == EF_KIND_DURATION)
		ef_str(ef_dur(ef_str(ef_dur(out, v->min), " to "), v->max), ")");
	else
		ef_str(ef_int(ef_str(ef_int(out, v->min), " to "), v->max), ")");
}

static void show_words(const struct ef_var *v, struct ef_buf *out)
{
	ef_str(out, "is not one of ");
	for (const struct ef_word *w = v->words; w->word; w++)
		ef_str(ef_str(out, w == v->words ? "" : ", "), w->word);
}

int ef_config_set(struct ef_config *c, const struct ef_var *v, const char *value,
		  struct ef_buf *msg)
{
	int64_t parsed = 0;
	enum ef_parse_err err = EF_PARSE_SYNTAX;

	for (const struct ef_word *w = v->words; value && w && w->word; w++)
		if (strcmp(value, w->word) == 0) {
			parsed = w->value;
			err = EF_PARSE_OK;
		}
	if (err != EF_PARSE_OK && v->kind == EF_KIND_DURATION)
		err = ef_parse_duration(value, v->min, v->max, &parsed);
	else if (err != EF_PARSE_OK && v->kind == EF_KIND_INT)
		err = ef_parse_int(value, v->min, v->max, &parsed);

	if (err == EF_PARSE_OK) {
		*(int64_t *)((char *)c + v->offset) = parsed;
		return 0;
	}
	ef_str(ef_str(ef_str(ef_str(msg, v->env), "='"), value ? value : ""), "' ");
	if (v->kind == EF_KIND_WORD) {
		show_words(v, msg);
		return -1;
	}
	ef_str(msg, ef_parse_strerror(err, v->kind == EF_KIND_DURATION));
	if (err == EF_PARSE_RANGE || err == EF_PARSE_OVERFLOW || err == EF_PARSE_NEGATIVE)
		show_range(v, msg);
	return -1;
}

void ef_config_show(int64_t value, const struct ef_var *v, struct ef_buf *out)
{
	for (const struct ef_word *w = v->words; w && w->word; w++)
		if (w->value == value) {
			ef_str(out, w->word);
			return;
		}
	if (v->kind == EF_KIND_DURATION)
		ef_dur(out, value);
	else
		ef_int(out, value);
}

static void load(struct ef_config *c, const struct ef_var *v, const char *value,
		 void (*warn)(const struct ef_buf *line), int quiet)
{
	char text[512];
	struct ef_buf line = EF_BUF(text);

	if (!value || !*value)
		return;
	ef_str(&line, "epollfix: ");
	if (ef_config_set(c, v, value, &line) == 0)
		return;
	*(int64_t *)((char *)c + v->offset) = v->fallback;
	ef_str(&line, "; using ");
	ef_config_show(v->fallback, v, &line);
	/* Leave room for the newline even when a huge value filled the buffer. */
	if (line.len + 2 > line.cap)
		line.len = line.cap - 2;
	ef_str(&line, "\n");
	if (!quiet && warn)
		warn(&line);
}

void ef_config_from_env(struct ef_config *c, const char *(*get)(const char *name),
			void (*warn)(const struct ef_buf *line))
{
	const struct ef_var *log = ef_var_find("log");

	ef_config_defaults(c);
	/* The log level first: quiet must silence the warnings about the others. */
	load(c, log, get(log->env), warn, 0);
	for (size_t i = 0; i < ef_nvars; i++)
		if (&ef_vars[i] != log)
			load(c, &ef_vars[i], get(ef_vars[i].env), warn, c->log == EF_LOG_QUIET);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path ? path : "";
}

int ef_name_listed(const char *list, const char *comm, const char *argv0)
{
	const char *base = base_name(argv0);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n && ((strlen(base) == n && strncmp(p, base, n) == 0) ||
			  (comm && strlen(comm) == n && strncmp(p, comm, n) == 0)))
			return 1;
		p = end ? end + 1 : p + n;
	}
	return 0;
}

int ef_program_selected(const char *only, const char *skip, const char *comm,
			const char *argv0, struct ef_buf *msg)
{
	int has_only = only && *only, has_skip = skip && *skip;

	if (has_only && has_skip) {
		ef_str(ef_str(ef_str(ef_str(ef_str(msg, "EPOLLFIX_ONLY='"), only), "' and EPOLLFIX_SKIP='"),
			      skip),
		       "' are both set; using neither and leaving this program alone");
		return 0;
	}
	if (has_only)
		return ef_name_listed(only, comm, argv0);
	if (has_skip)
		return !ef_name_listed(skip, comm, argv0);
	return 1;
}
