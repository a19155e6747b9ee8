/* libFuzzer target for the one parser and the configuration table: any bytes
 * as a variable's value. Each input checks the parser against a reference
 * written independently with 128-bit arithmetic, and the documented invariants:
 * refused values leave outputs alone, accepted ones lie in range, messages stay
 * inside their buffers and end in a NUL, shown values parse back to themselves.
 *
 * Input: byte 0 chooses the check, bytes 1-16 give numbers (bounds, a
 * variable, a buffer size), the rest is the text (cut at its first NUL). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fmt.h"
#include "parse.h"

#define CHECK(x)                  \
	do {                      \
		if (!(x))         \
			abort();  \
	} while (0)

static int64_t i64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

/* ---- reference parser ------------------------------------------------------ */

static const struct {
	const char *name;
	int64_t ns;
	int frac;
} ref_units[] = { { "ns", 1, 0 }, { "us", 1000, 3 }, { "ms", 1000000, 6 }, { "s", 1000000000, 9 } };

typedef __int128 i128;
#define SAT ((i128)1 << 70) /* saturated: above any int64, and SAT * 1e9 fits */

static enum ef_parse_err ref_range(i128 v, int64_t min, int64_t max, int64_t *out)
{
	if (v > INT64_MAX)
		return EF_PARSE_OVERFLOW;
	if (v < min || v > max)
		return EF_PARSE_RANGE;
	*out = (int64_t)v;
	return EF_PARSE_OK;
}

static enum ef_parse_err ref_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (!*s)
		return EF_PARSE_EMPTY;
	if (*s == '-')
		return EF_PARSE_NEGATIVE;
	i128 v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return EF_PARSE_SYNTAX;
		v = v * 10 + (*p - '0');
		if (v > SAT)
			v = SAT;
	}
	return ref_range(v, min, max, out);
}

static enum ef_parse_err ref_duration(const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (!*s)
		return EF_PARSE_EMPTY;
	if (*s == '-')
		return EF_PARSE_NEGATIVE;
	size_t n = strlen(s), u;
	for (u = 0; u < 4; u++) {
		size_t k = strlen(ref_units[u].name);
		/* the longest unit that ends the text: "ms" before "s" */
		if (n >= k && strcmp(s + n - k, ref_units[u].name) == 0 &&
		    !(u == 3 && n >= 2 && (s[n - 2] == 'm' || s[n - 2] == 'u' || s[n - 2] == 'n')))
			break;
	}
	if (u == 4)
		return EF_PARSE_SYNTAX;
	size_t len = n - strlen(ref_units[u].name);
	i128 whole = 0, frac = 0;
	int digits = 0, dots = 0, used = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (dots++)
				return EF_PARSE_SYNTAX;
			continue;
		}
		if (c < '0' || c > '9')
			return EF_PARSE_SYNTAX;
		digits++;
		if (!dots) {
			whole = whole * 10 + (c - '0');
			if (whole > SAT)
				whole = SAT;
		} else if (used < ref_units[u].frac) {
			frac = frac * 10 + (c - '0');
			used++;
		}
	}
	if (!digits)
		return EF_PARSE_SYNTAX;
	for (; used < ref_units[u].frac; used++)
		frac *= 10;
	return ref_range(whole * ref_units[u].ns + frac, min, max, out);
}

/* ---- checks --------------------------------------------------------------- */

static void check_parse(const char *s, int64_t min, int64_t max, int duration)
{
	int64_t got = 0x5a5a5a5a5a5a5a5a, want = got;
	enum ef_parse_err e = duration ? ef_parse_duration(s, min, max, &got)
				       : ef_parse_int(s, min, max, &got);
	enum ef_parse_err r = duration ? ref_duration(s, min, max, &want)
				       : ref_int(s, min, max, &want);
	CHECK(e == r);
	CHECK(got == want); /* unchanged on refusal, the same value otherwise */
	if (e == EF_PARSE_OK)
		CHECK(got >= min && got <= max && got >= 0);
	CHECK(ef_parse_strerror(e, duration) != NULL);
}

static void check_format(int64_t ns, size_t size)
{
	char big[64], *small = malloc(size ? size : 1);
	ef_format_duration(ns, big, sizeof(big));
	CHECK(strlen(big) < sizeof(big));
	if (ns >= 0) { /* shown durations parse back exactly */
		int64_t back = -1;
		CHECK(ef_parse_duration(big, 0, INT64_MAX, &back) == EF_PARSE_OK);
		CHECK(back == ns);
	}
	ef_format_duration(ns, small, size); /* ASan: never past size */
	if (size) {
		CHECK(strlen(small) < size);
		CHECK(strncmp(small, big, strlen(small)) == 0); /* a prefix of the whole */
	}
	free(small);
}

static int valid_value(const struct ef_var *v, int64_t x)
{
	for (const struct ef_word *w = v->words; w && w->word; w++)
		if (w->value == x)
			return 1;
	return v->kind != EF_KIND_WORD && x >= v->min && x <= v->max;
}

static void check_set(const struct ef_var *v, const char *value, size_t cap)
{
	struct ef_config c, before;
	char *text = malloc(cap ? cap : 1);
	struct ef_buf msg = { text, 0, cap };

	if (cap)
		text[0] = '\0'; /* a success writes nothing */
	ef_config_defaults(&c);
	before = c;
	int r = ef_config_set(&c, v, value, &msg);
	CHECK(r == 0 || r == -1);
	if (cap)
		CHECK(msg.len < cap && text[msg.len] == '\0' && strlen(text) == msg.len);
	if (r != 0) {
		CHECK(memcmp(&c, &before, sizeof(c)) == 0);
	} else {
		int64_t x = ef_config_get(&c, v);
		CHECK(valid_value(v, x));
		/* Only v changed. */
		ef_config_set(&before, v, value, &(struct ef_buf){ NULL, 0, 0 });
		CHECK(memcmp(&c, &before, sizeof(c)) == 0);
		/* What the report shows sets the same value again. */
		char shown[128];
		struct ef_buf sb = EF_BUF(shown);
		ef_config_show(x, v, &sb);
		struct ef_config again;
		ef_config_defaults(&again);
		char m2[256];
		CHECK(ef_config_set(&again, v, shown, &EF_BUF(m2)) == 0);
		CHECK(ef_config_get(&again, v) == x);
	}
	free(text);
}

/* from_env: the text holds the variables' values, separated by '\n'. */
static const char *env_vals[64];
static size_t env_n;
static const char *fake_get(const char *name)
{
	for (size_t i = 0; i < ef_nvars && i < env_n; i++)
		if (strcmp(name, ef_vars[i].env) == 0)
			return env_vals[i];
	return NULL;
}
static size_t warnings;
static void fake_warn(const struct ef_buf *line)
{
	CHECK(line->len > 0 && line->len < line->cap);
	CHECK(line->p[line->len - 1] == '\n' && line->p[line->len] == '\0');
	CHECK(memcmp(line->p, "epollfix: ", 10) == 0);
	warnings++;
}

static void check_from_env(char *text)
{
	struct ef_config c, d;
	env_n = 0;
	for (char *p = text; env_n < 64; env_n++) {
		env_vals[env_n] = p;
		char *nl = strchr(p, '\n');
		if (!nl) {
			env_n++;
			break;
		}
		*nl = '\0';
		p = nl + 1;
	}
	warnings = 0;
	ef_log_sink(fake_warn);
	ef_config_from_env(&c, NULL, fake_get);
	ef_config_defaults(&d);
	size_t refused = 0;
	for (size_t i = 0; i < ef_nvars; i++) {
		const struct ef_var *v = &ef_vars[i];
		if (v->kind == EF_KIND_TEXT) /* not read without a struct ef_text */
			continue;
		int64_t x = ef_config_get(&c, v);
		const char *val = fake_get(v->env);
		if (!val || !*val) {
			CHECK(x == ef_config_get(&d, v)); /* unset or empty: the default */
			continue;
		}
		struct ef_config one;
		ef_config_defaults(&one);
		char m[64];
		if (ef_config_set(&one, v, val, &EF_BUF(m)) == 0) {
			CHECK(x == ef_config_get(&one, v)); /* as the table's own setter */
		} else {
			CHECK(x == v->fallback);
			refused++;
		}
		CHECK(valid_value(v, x) || x == v->fallback);
	}
	/* One warning per refused value, none at all when the log is quiet. */
	CHECK(warnings == (c.log == EF_LOG_QUIET ? 0 : refused));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 17)
		return 0;
	char *s = malloc(size - 17 + 1);
	memcpy(s, data + 17, size - 17);
	s[size - 17] = '\0';
	int64_t a = i64(data + 1), b = i64(data + 9);

	switch (data[0] % 6) {
	case 0: /* bounds as given, and the table's real bounds */
		check_parse(s, a, b, 1);
		check_parse(s, 0, INT64_MAX, 1);
		break;
	case 1:
		check_parse(s, a, b, 0);
		check_parse(s, 0, INT64_MAX, 0);
		break;
	case 2:
		check_format(a, (size_t)(data[9] % 40));
		break;
	case 3:
		check_set(&ef_vars[(size_t)data[1] % ef_nvars], s, (size_t)(data[2] % 200));
		break;
	case 4:
		check_from_env(s);
		break;
	case 5: /* lookups by any name */
		if (ef_var_find(s))
			CHECK(strcmp(ef_var_find(s)->name, s) == 0 || strcmp(ef_var_find(s)->env, s) == 0);
		break;
	}
	free(s);
	return 0;
}
