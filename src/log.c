#include "log.h"

#include <unistd.h>

void ef_warn_line(const struct ef_buf *line)
{
	ef_buf_write(line, STDERR_FILENO);
}
