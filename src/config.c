#include "config.h"

#include <string.h>

#include "parse.h"

static const struct ef_word ef_off_word[] = { { "off", 0 }, { NULL, 0 } };
static const struct ef_word ef_keep_word[] = { { "keep", -1 }, { NULL, 0 } };
static const struct ef_word ef_log_words[] = {
	{ "quiet", EF_LOG_QUIET }, { "warn", EF_LOG_WARN }, { "debug", EF_LOG_DEBUG }, { NULL, 0 }
};
static const struct ef_word ef_bool_words[] = { { "0", 0 }, { "1", 1 }, { NULL, 0 } };
static const struct ef_word ef_adapt_words[] = {
	{ "off", 0 }, { "auto", 1 }, { "safe", 2 }, { NULL, 0 }
};

#define NUM_ROW(member, ENV, name_, kind_, min_, max_, def_, fallback_, words_, arg_, help_)     \
	{ .name = name_, .env = "EPOLLFIX_" #ENV, .kind = EF_KIND_##kind_,                       \
	  .offset = offsetof(struct ef_config, member), .size = sizeof(int64_t), .min = min_,    \
	  .max = max_, .def = def_, .fallback = fallback_, .words = words_, .arg = arg_,         \
	  .help = help_ },
#define TEXT_ROW(member, ENV, name_, size_, min_len, def_, fallback_, bare_, arg_, help_)        \
	{ .name = name_, .env = "EPOLLFIX_" #ENV, .kind = EF_KIND_TEXT,                          \
	  .offset = offsetof(struct ef_text, member), .size = size_, .min = min_len,             \
	  .max = size_ - 1, .text_def = def_, .text_fallback = fallback_, .bare = bare_,          \
	  .arg = arg_, .help = help_ },

const struct ef_var ef_vars[] = { EF_CONFIG_TABLE(NUM_ROW, TEXT_ROW) };
const size_t ef_nvars = sizeof(ef_vars) / sizeof(ef_vars[0]);

#define TEXT_FITS(member, ENV, name, size, min_len, def, fallback, ...)                          \
	_Static_assert(sizeof(def) <= (size) && sizeof(fallback) <= (size), #ENV " fits");
EF_CONFIG_TABLE(EF_SKIP_ROW, TEXT_FITS)

static int64_t *num_at(struct ef_config *c, const struct ef_var *v)
{
	return (int64_t *)((char *)c + v->offset);
}

static char *text_at(struct ef_text *t, const struct ef_var *v)
{
	return (char *)t + v->offset;
}

void ef_config_defaults(struct ef_config *c)
{
	for (size_t i = 0; i < ef_nvars; i++)
		if (ef_vars[i].kind != EF_KIND_TEXT)
			*num_at(c, &ef_vars[i]) = ef_vars[i].def;
}

void ef_text_defaults(struct ef_text *t)
{
	for (size_t i = 0; i < ef_nvars; i++)
		if (ef_vars[i].kind == EF_KIND_TEXT)
			strcpy(text_at(t, &ef_vars[i]), ef_vars[i].text_def);
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
	return v->kind == EF_KIND_TEXT ? 0 : *(const int64_t *)((const char *)c + v->offset);
}

const char *ef_text_get(const struct ef_text *t, const struct ef_var *v)
{
	return v->kind == EF_KIND_TEXT ? (const char *)t + v->offset : "";
}

int ef_text_set(struct ef_text *t, const struct ef_var *v, const char *value,
		struct ef_buf *msg)
{
	size_t n = value ? strlen(value) : 0;

	if (v->kind == EF_KIND_TEXT && n >= (size_t)v->min && n <= (size_t)v->max) {
		memcpy(text_at(t, v), value ? value : "", n + 1);
		return 0;
	}
	if (v->kind == EF_KIND_TEXT && n > (size_t)v->max) {
		/* Its start: the rest would push the reason out of a warning line. */
		char start[41];
		memcpy(start, value, sizeof(start) - 1);
		start[sizeof(start) - 1] = '\0';
		ef_str(ef_str(ef_str(ef_str(msg, v->env), "='"), start), "...' ");
		ef_str(ef_int(ef_str(msg, "is longer than "), v->max), " characters");
		return -1;
	}
	ef_str(ef_str(ef_str(ef_str(msg, v->env), "='"), value ? value : ""), "' ");
	if (v->kind != EF_KIND_TEXT)
		ef_str(msg, "is not text");
	else
		ef_str(msg, "is empty");
	return -1;
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

	if (v->kind == EF_KIND_TEXT) {
		ef_str(ef_str(msg, v->env), " is read once at start-up");
		return -1;
	}
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

void ef_config_show_default(const struct ef_var *v, struct ef_buf *out)
{
	if (v->kind != EF_KIND_TEXT)
		ef_config_show(v->def, v, out);
	else
		ef_str(out, *v->text_def ? v->text_def : "unset");
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

static void load(struct ef_config *c, struct ef_text *t, const struct ef_var *v,
		 const char *value, void (*warn)(const struct ef_buf *line), int quiet)
{
	char text[512];
	struct ef_buf line = EF_BUF(text);

	if (!value || !*value || (v->kind == EF_KIND_TEXT && !t))
		return;
	ef_str(&line, "epollfix: ");
	if (v->kind == EF_KIND_TEXT) {
		if (ef_text_set(t, v, value, &line) == 0)
			return;
		strcpy(text_at(t, v), v->text_fallback);
		ef_str(ef_str(&line, "; using "), *v->text_fallback ? v->text_fallback : "unset");
	} else {
		if (ef_config_set(c, v, value, &line) == 0)
			return;
		*num_at(c, v) = v->fallback;
		ef_str(&line, "; using ");
		ef_config_show(v->fallback, v, &line);
	}
	/* Leave room for the newline even when a huge value filled the buffer. */
	if (line.len + 2 > line.cap)
		line.len = line.cap - 2;
	ef_str(&line, "\n");
	if (!quiet && warn)
		warn(&line);
}

void ef_config_from_env(struct ef_config *c, struct ef_text *t,
			const char *(*get)(const char *name),
			void (*warn)(const struct ef_buf *line))
{
	const struct ef_var *log = ef_var_find("log");

	ef_config_defaults(c);
	if (t)
		ef_text_defaults(t);
	/* The log level first: quiet must silence the warnings about the others. */
	load(c, t, log, get(log->env), warn, 0);
	for (size_t i = 0; i < ef_nvars; i++)
		if (&ef_vars[i] != log)
			load(c, t, &ef_vars[i], get(ef_vars[i].env), warn, c->log == EF_LOG_QUIET);
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
