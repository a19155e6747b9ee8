/* `epollfix status`: the command's reader of running processes (status.c). */
#ifndef EPOLLFIX_STATUS_H
#define EPOLLFIX_STATUS_H

/* argv[0] is "status". Returns the exit status. */
int ef_status_main(int argc, char **argv);

#endif
