/* `epollfix agent` and `epollfix attach PID` (doc/agent.md): built when the
 * kernel side is (meson -Dbpf, src/bpf). */
#ifndef EPOLLFIX_AGENT_H
#define EPOLLFIX_AGENT_H

/* argv[0] is "agent" or "attach". The exit status. */
int ef_agent_main(int argc, char **argv);

#endif
