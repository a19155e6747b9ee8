#include "config.h"

#include <string.h>

#include "parse.h"

static const struct ef_word ef_off_word[] = { { "off", 0 }, { NULL, 0 } };
static const struct ef_word ef_keep_word[] = { { "keep", -1 }, { NULL, 0 } };
static const struct ef_word ef_log_words[] = {
	{ "quiet", EF_LOG_QUIET }, { "warn", EF_LOG_WARN }, { "debug", EF_LOG_DEBUG }, { NULL, 0 }
};
static const struct ef_word ef_bool_words[] = { { "0", 0 }, { "1", 1 }, { NULL, 0 } };
static const struct ef_word ef_seccomp_words[] = { { "safe", EF_SECCOMP_SAFE },
						   { "trust", EF_SECCOMP_TRUST },
						   { "auto", EF_SECCOMP_AUTO },
						   { "probe", EF_SECCOMP_PROBE },
						   { NULL, 0 } };
static const struct ef_word ef_go_words[] = { { "off", EF_GO_OFF },
					      { "auto", EF_GO_AUTO },
					      { NULL, 0 } };
static const struct ef_word ef_adapt_words[] = {
	{ "off", EF_ADAPT_OFF }, { "auto", EF_ADAPT_AUTO }, { "safe", EF_ADAPT_SAFE }, { NULL, 0 }
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
_Static_assert(sizeof(ef_vars) / sizeof(ef_vars[0]) == EF_NVARS, "one row, one index");

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

static void show_range(const struct ef_var *v, struct ef_buf *out)
{
	if (v->kind == EF_KIND_DURATION)
		ef_fmt(out, " (%s to %s)", EF_DUR(v->min), EF_DUR(v->max));
	else
		ef_fmt(out, " (%" PRId64 " to %" PRId64 ")", v->min, v->max);
}

static void show_words(const struct ef_var *v, struct ef_buf *out)
{
	ef_fmt(out, "is not one of ");
	for (const struct ef_word *w = v->words; w->word; w++)
		ef_fmt(out, "%s%s", w == v->words ? "" : ", ", w->word);
}

/* Sets v (a number in c, or TEXT in t) from value. On refusal nothing changes,
 * -1 is returned and why receives the reason alone: "is not a duration (like
 * 50us)". */
static int set_value(struct ef_config *c, struct ef_text *t, const struct ef_var *v,
		     const char *value, struct ef_buf *why)
{
	int64_t parsed = 0;
	enum ef_parse_err err = EF_PARSE_SYNTAX;

	if (v->kind == EF_KIND_TEXT) {
		size_t n = value ? strlen(value) : 0;
		if (n > (size_t)v->max)
			ef_fmt(why, "is longer than %" PRId64 " characters", v->max);
		else if (n < (size_t)v->min)
			ef_fmt(why, "is empty");
		else
			memcpy(text_at(t, v), value ? value : "", n + 1);
		return n >= (size_t)v->min && n <= (size_t)v->max ? 0 : -1;
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
		*num_at(c, v) = parsed;
		return 0;
	}
	if (v->kind == EF_KIND_WORD) {
		show_words(v, why);
		return -1;
	}
	ef_fmt(why, "%s", ef_parse_strerror(err, v->kind == EF_KIND_DURATION));
	if (err == EF_PARSE_RANGE || err == EF_PARSE_OVERFLOW || err == EF_PARSE_NEGATIVE)
		show_range(v, why);
	return -1;
}

/* "EPOLLFIX_SUBMS='abc' ": a value too long for a line shows its start only. */
static void name_value(const struct ef_var *v, const char *value, struct ef_buf *msg)
{
	char start[160];
	size_t n = value ? strlen(value) : 0;

	if (n >= sizeof(start)) {
		memcpy(start, value, sizeof(start) - 4);
		strcpy(start + sizeof(start) - 4, "...");
		value = start;
	}
	ef_fmt(msg, "%s='%s' ", v->env, value ? value : "");
}

int ef_config_set(struct ef_config *c, const struct ef_var *v, const char *value,
		  struct ef_buf *msg)
{
	if (v->kind == EF_KIND_TEXT) {
		ef_fmt(msg, "%s is read once at start-up", v->env);
		return -1;
	}
	size_t mark = msg->len;
	name_value(v, value, msg);
	if (set_value(c, NULL, v, value, msg) == 0) {
		msg->len = mark;
		if (msg->cap)
			msg->p[mark] = '\0';
		return 0;
	}
	return -1;
}

int ef_text_set(struct ef_text *t, const struct ef_var *v, const char *value,
		struct ef_buf *msg)
{
	size_t mark = msg->len;

	if (v->kind != EF_KIND_TEXT) {
		ef_fmt(msg, "%s is not text", v->env);
		return -1;
	}
	name_value(v, value, msg);
	if (set_value(NULL, t, v, value, msg) == 0) {
		msg->len = mark;
		if (msg->cap)
			msg->p[mark] = '\0';
		return 0;
	}
	return -1;
}

void ef_config_show_default(const struct ef_var *v, struct ef_buf *out)
{
	if (v->kind != EF_KIND_TEXT)
		ef_config_show(v->def, v, out);
	else
		ef_fmt(out, "%s", *v->text_def ? v->text_def : "unset");
}

void ef_config_show(int64_t value, const struct ef_var *v, struct ef_buf *out)
{
	for (const struct ef_word *w = v->words; w && w->word; w++)
		if (w->value == value) {
			ef_fmt(out, "%s", w->word);
			return;
		}
	if (v->kind == EF_KIND_DURATION)
		ef_fmt(out, "%s", EF_DUR(value));
	else
		ef_fmt(out, "%" PRId64, value);
}

/* v's fallback, for a refused value, with "; using X" in line. */
static void fall_back(struct ef_config *c, struct ef_text *t, const struct ef_var *v,
		      struct ef_buf *line)
{
	ef_fmt(line, "; using ");
	if (v->kind == EF_KIND_TEXT) {
		strcpy(text_at(t, v), v->text_fallback);
		ef_fmt(line, "%s", *v->text_fallback ? v->text_fallback : "unset");
	} else {
		*num_at(c, v) = v->fallback;
		ef_config_show(v->fallback, v, line);
	}
}

/* Every warning of the configuration goes through the log gate, whose level
 * the loading functions below keep to the level loaded so far. */
static void send(const struct ef_buf *msg)
{
	ef_log(EF_LOG_WARN, "%s", msg->p);
}

static void note(struct ef_origin *o, const struct ef_var *v, enum ef_from from, unsigned line)
{
	if (o) {
		o->from[v - ef_vars] = (unsigned char)from;
		o->line[v - ef_vars] = line;
	}
}

static void load(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
		 const struct ef_var *v, const char *value)
{
	char text[512];
	struct ef_buf line = EF_BUF(text);

	if (!value || !*value || (v->kind == EF_KIND_TEXT && !t))
		return;
	note(o, v, EF_FROM_ENV, 0);
	name_value(v, value, &line);
	if (set_value(c, t, v, value, &line) == 0)
		return;
	fall_back(c, t, v, &line);
	send(&line);
}

void ef_config_apply_env(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
			 const char *(*get)(const char *name))
{
	const struct ef_var *log = &ef_vars[EF_VAR_log];

	/* The log level first: quiet must silence the warnings about the others.
	 * A refused EPOLLFIX_LOG itself is always reported. */
	ef_log_set_level(EF_LOG_WARN);
	load(c, t, o, log, get(log->env));
	ef_log_set_level((enum ef_log)c->log);
	for (size_t i = 0; i < ef_nvars; i++)
		if (&ef_vars[i] != log)
			load(c, t, o, &ef_vars[i], get(ef_vars[i].env));
}

void ef_config_from_env(struct ef_config *c, struct ef_text *t,
			const char *(*get)(const char *name))
{
	ef_config_defaults(c);
	if (t)
		ef_text_defaults(t);
	ef_config_apply_env(c, t, NULL, get);
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* One line of the file, n bytes at p: a comment, blank, or "key = value".
 * pass 0 takes only the log level, pass 1 the rest, so that "log = quiet"
 * silences the warnings about every other line. */
static void file_line(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
		      const char *file, unsigned number, const char *p, size_t n,
		      int pass)
{
	char key[32], value[EF_PATH_SIZE + 1], text[640];
	struct ef_buf line = EF_BUF(text);

	/* A comment starts at a '#' that opens the line or follows a space. */
	for (size_t i = 0; i < n; i++)
		if (p[i] == '#' && (i == 0 || is_space(p[i - 1]))) {
			n = i;
			break;
		}
	while (n && is_space(*p)) {
		p++;
		n--;
	}
	while (n && is_space(p[n - 1]))
		n--;
	if (!n)
		return;
	const char *eq = memchr(p, '=', n), *end = p + n;
	size_t klen = eq ? (size_t)(eq - p) : n;
	while (klen && is_space(p[klen - 1]))
		klen--;
	memcpy(key, p, klen < sizeof(key) ? klen : sizeof(key) - 1);
	key[klen < sizeof(key) ? klen : sizeof(key) - 1] = '\0';
	const struct ef_var *v = eq && klen < sizeof(key) ? ef_var_find(key) : NULL;
	if (v && strcmp(v->name, key) != 0)
		v = NULL; /* the file takes runtime names, not the variables' */
	int is_log = v == &ef_vars[EF_VAR_log];
	if (pass == 0 ? !is_log : is_log)
		return;

	/* "FILE:N: 'the line' ": the start of every warning. */
	ef_fmt(&line, "%s:%u: '", file, number);
	size_t shown = n < 80 ? n : 80;
	char part[84];
	memcpy(part, p, shown);
	strcpy(part + shown, n > shown ? "..." : "");
	ef_fmt(&line, "%s' ", part);
	if (!v || v == &ef_vars[EF_VAR_config]) {
		ef_fmt(&line, "%s; ignored",
		       !eq ? "is not key = value"
		       : v ? "cannot name another file"
			   : "is not a setting of epollfix");
		send(&line);
		return;
	}
	const char *vp = eq + 1;
	while (vp < end && is_space(*vp))
		vp++;
	size_t vlen = (size_t)(end - vp);
	if (v->kind == EF_KIND_TEXT && vlen == 0) {
		/* "only =" unsets what an earlier line set. */
		strcpy(text_at(t, v), v->text_def);
		note(o, v, EF_FROM_FILE, number);
		return;
	}
	memcpy(value, vp, vlen < sizeof(value) ? vlen : sizeof(value) - 1);
	value[vlen < sizeof(value) ? vlen : sizeof(value) - 1] = '\0';
	note(o, v, EF_FROM_FILE, number);
	if (vlen < sizeof(value) && set_value(c, t, v, value, &line) == 0)
		return;
	if (vlen >= sizeof(value))
		ef_fmt(&line, "is too long");
	fall_back(c, t, v, &line);
	send(&line);
}

void ef_config_from_file(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
			 const char *file, const char *text, size_t len)
{
	for (int pass = 0; pass < 2; pass++) {
		unsigned number = 1;
		for (size_t at = 0; at < len; number++) {
			const char *nl = memchr(text + at, '\n', len - at);
			size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
			file_line(c, t, o, file, number, text + at, n, pass);
			at += n + 1;
		}
		/* The file's "log = quiet" silences its other lines; nothing in it
		 * undoes a quiet already in force (EPOLLFIX_LOG). */
		if (pass == 0 && c->log == EF_LOG_QUIET)
			ef_log_set_level(EF_LOG_QUIET);
	}
}

void ef_config_show_origin(const struct ef_origin *o, const struct ef_var *v, const char *file,
			   struct ef_buf *out)
{
	size_t i = (size_t)(v - ef_vars);

	if (o->from[i] == EF_FROM_FILE)
		ef_fmt(out, "%s:%u", file, o->line[i]);
	else if (o->from[i] == EF_FROM_ENV)
		ef_fmt(out, "environment (%s)", v->env);
	else
		ef_fmt(out, "default");
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path ? path : "";
}

int ef_name_listed(const char *list, const char *comm, const char *argv0)
{
	const char *base = base_name(argv0);

	size_t n;
	for (const char *p; (p = ef_list_next(&list, &n));)
		if ((strlen(base) == n && strncmp(p, base, n) == 0) ||
		    (comm && strlen(comm) == n && strncmp(p, comm, n) == 0))
			return 1;
	return 0;
}

int ef_program_selected(const char *only, const char *skip, const char *comm,
			const char *argv0, struct ef_buf *msg)
{
	int has_only = only && *only, has_skip = skip && *skip;

	if (has_only && has_skip) {
		ef_fmt(msg, "EPOLLFIX_ONLY='%s' and EPOLLFIX_SKIP='%s' are both set; using neither and "
			    "leaving this program alone",
		       only, skip);
		return 0;
	}
	if (has_only)
		return ef_name_listed(only, comm, argv0);
	if (has_skip)
		return !ef_name_listed(skip, comm, argv0);
	return 1;
}
