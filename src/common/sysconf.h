/* The whole configuration, as the library and the command load it: the table's
 * defaults, then the system file, then the environment. Start-up only: it
 * reads a file (open/read into a bounded static buffer, no stdio, no
 * allocation), so it never runs on the wait path. */
#ifndef EPOLLFIX_SYSCONF_H
#define EPOLLFIX_SYSCONF_H

#include "config.h"

enum ef_file_state { EF_FILE_MISSING, EF_FILE_READ, EF_FILE_IGNORED };

/* get is getenv, or NULL for everything in secure execution. The file is
 * EPOLLFIX_CONFIG (through get) or EF_SYSCONF_FILE; *file receives its path.
 * A missing file is silent; one that is not a regular file, is writable by
 * group or others, or is owned by anyone but root or this process's effective
 * user is ignored with one warning. */
enum ef_file_state ef_config_load(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
				  const char **file, const char *(*get)(const char *name));
/* The same with sysconf the file read where EPOLLFIX_CONFIG is unset (the
 * command's: the file of the library it would preload, which another build's
 * may be). */
enum ef_file_state ef_config_load_from(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
				       const char **file, const char *sysconf,
				       const char *(*get)(const char *name));

#endif
