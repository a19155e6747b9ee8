#include "callers.h"

#include <string.h>

#include "parse.h"

/* s[0..n) is "", or ".5", ".5.2.4": a shared library's version suffix. */
static int version_suffix(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (s[i] != '.' || i + 1 >= n || s[i + 1] < '0' || s[i + 1] > '9')
			return 0;
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
	}
	return 1;
}

static int item_matches(const char *item, size_t n, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t blen = strlen(base);

	if (memchr(item, '/', n)) /* a path names that path */
		return strlen(path) == n && strncmp(path, item, n) == 0;

	if (blen >= n && strncmp(base, item, n) == 0 && version_suffix(base + n, blen - n))
		return 1;
	/* Directory names: each component before the basename. */
	for (const char *p = path; p < base;) {
		const char *slash = strchr(p, '/');
		if ((size_t)(slash - p) == n && strncmp(p, item, n) == 0)
			return 1;
		p = slash + 1;
	}
	return 0;
}

int ef_object_listed(const char *list, const char *path)
{
	if (!path || !*path)
		return 0;
	size_t n;
	for (const char *item; (item = ef_list_next(&list, &n));)
		if (item_matches(item, n, path))
			return 1;
	return 0;
}

enum ef_listed ef_object_judged(const char *genuine, const char *subms, const char *path,
				const char *alias)
{
	if (ef_object_listed(genuine, path) || ef_object_listed(genuine, alias))
		return EF_LISTED_GENUINE;
	if (ef_object_listed(subms, path) || ef_object_listed(subms, alias))
		return EF_LISTED_SUBMS;
	return EF_LISTED_NONE;
}
