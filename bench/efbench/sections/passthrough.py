"""Section 3, pass-through overhead: ns per call of the epoll_wait calls the
policy leaves alone, in separate processes and paired in one process
(efb-pass --paired 1) with a control without the library; the calls the
library watches and otherwise passes on; and user-space instructions per
call (callgrind)."""
import os
import re
import shutil
import subprocess

from ..report import table
from ..runner import Failed
from ..stats import Fig


def passthrough(b):
    count, rounds = (20000, 2) if b.quick else (100000, 4)
    saved = b.runs
    if not b.quick:
        b.runs = max(b.runs, 7)
    cases = {"zero": "timeout 0, idle fd", "ready": "timeout -1, event ready",
             "long": "timeout 5 ms (> MAX_MS), event ready"}
    md = [f"`epoll_wait` in a tight loop, {rounds} rounds of {count} calls after a warm-up round; "
          f"a run's figure is its fastest round; {b.runs} runs alternating without and with.\n"]
    keys = [(c, lib) for c in cases for lib in (False, True)]

    def once(k, rep):
        c, lib = k
        return b.run(f"pass-{c}-{'with' if lib else 'without'}",
                     [b.prog("efb-pass"), "--case", c, "--count", count, "--rounds", rounds], lib=lib)
    try:
        res = b.alternate(keys, once)
    finally:
        b.runs = saved
    rows = []
    for c in cases:
        f0 = Fig([r["ns_per_call"] for r in res[(c, False)]])
        f1 = Fig([r["ns_per_call"] for r in res[(c, True)]])
        delta = Fig([w["ns_per_call"] - o["ns_per_call"] for o, w in zip(res[(c, False)], res[(c, True)])],
                    tail=True)
        rows.append([cases[c], f0.fmt(digits=1), f1.fmt(digits=1), f"{f1.med - f0.med:+.1f}",
                     delta.fmt(digits=1), f"{(f1.med / f0.med - 1) * 100:+.1f}%"])
    md.append(table(["call", "ns/call without", "ns/call with", "difference of medians",
                     "difference run by run", "relative"], rows))

    prounds = 6 if b.quick else 24
    md.append(f"\n### In one process, paired\n\nSeparate processes differ by more than the library costs "
              f"on this machine, so the target is judged here: in one process under the library "
              f"(`efb-pass --paired 1`), {prounds} rounds of {count} calls alternate ABBA between "
              f"`epoll_wait` as the program sees it (the library's) and libc's own `epoll_wait` "
              f"(looked up in libc.so.6), both through a pointer. Added = fastest round of the program's "
              f"minus fastest round of libc's. The control is the same program without the library, where "
              f"both are libc's: its figure is the resolution of the method.\n")
    figs = paired(b, "pass-paired", cases, count, prounds)
    rows = []
    for c in cases:
        libc, added, control = figs[c]
        allowed = max(0.02 * libc.med, 5.0)
        met = added.med <= allowed
        rows.append(paired_cells(cases[c], figs[c]) + [f"{allowed:.1f}", "met" if met else "missed"])
        b.targets.append((f"3. pass-through overhead at most max(2%, 5 ns): {cases[c]}",
                          f"{libc.med:.1f} ns a call in libc, {added.med:+.1f} ns added by the library "
                          f"(paired; control {control.med:+.1f} ns)", met))
        if c == "zero":
            b.targets.append(("3. time added to an idle epoll_wait(0), paired in one process: at most 3 ns",
                              f"{added.med:+.1f} ns (runs {added.lo:+.1f} to {added.hi:+.1f}; "
                              f"control {control.med:+.1f} ns)", added.med <= 3.0))
    md.append(table(PAIRED_HEAD + ["allowed ns", "target"], rows))

    watched = {"syscall": "syscall(SYS_getppid)", "prctl": "prctl(PR_GET_DUMPABLE)",
               "slack": "prctl(PR_GET_TIMERSLACK), no run open"}
    md.append(f"\nThe calls the library watches (for the timer slack and seccomp filters) and otherwise "
              f"passes on, paired the same way ({prounds} rounds of {count} calls, the program's function "
              f"against libc's own):\n")
    figs = paired(b, "watched-paired", watched, count, prounds)
    md.append(table(PAIRED_HEAD, [paired_cells(watched[c], figs[c]) for c in watched]))

    md.append("\n### Instructions per call (callgrind)\n")
    if not shutil.which("valgrind"):
        md.append("valgrind is not installed: skipped.\n")
        return "\n".join(md)
    n = 2000 if b.quick else 20000
    md.append(f"`valgrind --tool=callgrind` on efb-pass with {n} and {2 * n} calls a round (1 round + "
              f"warm-up); the difference of the two totals over the difference in calls gives the "
              f"user-space instructions of one call, start-up excluded (the kernel's are not counted).\n")
    rows = []
    for c in (["zero"] if b.quick else list(cases)):
        per = []
        for lib in (False, True):
            tot = []
            for cnt in (n, 2 * n):
                b.seq += 1
                outf = os.path.join(b.raw, f"{b.seq:04d}-callgrind-{c}-{'with' if lib else 'without'}-{cnt}.out")
                cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={outf}",
                       b.prog("efb-pass"), "--case", c, "--count", str(cnt), "--rounds", "1"]
                env = b.env(lib, None)
                b.log.write(f"{b.seq:04d} callgrind: {'env LD_PRELOAD=' + b.lib + ' ' if lib else ''}{' '.join(cmd)}\n")
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    raise Failed(f"callgrind {c}: {p.stderr.strip()[-300:]}")
                with open(outf) as f:
                    m = re.search(r"^summary:\s*(\d+)", f.read(), re.M)
                if not m:
                    raise Failed(f"callgrind {c}: no summary in {outf}")
                tot.append(int(m.group(1)))
            per.append((tot[1] - tot[0]) / (2 * n))
        rows.append([cases[c], f"{per[0]:.0f}", f"{per[1]:.0f}", f"{per[1] - per[0]:+.0f}"])
        b.targets.append((f"3. instructions added to a call left alone (callgrind) at most 15: {cases[c]}",
                          f"{per[1] - per[0]:+.0f} instructions ({per[0]:.0f} without, {per[1]:.0f} with)",
                          round(per[1] - per[0]) <= 15))  # a call's count is whole: the rest is start-up noise
    md.append(table(["call", "instructions without", "with", "added by the library"], rows))
    return "\n".join(md)


def paired(b, tag, calls, count, prounds):
    """efb-pass --paired 1 for each of calls (efb-pass --case names), under
    the library and, as the control, without it, alternating; at least 5
    runs each but in quick mode. Returns {call: (libc, added, control)}: the
    Figs of libc's ns per call, of the ns the library adds to it, and of the
    control's difference (the method's resolution)."""
    keys = [(c, lib) for c in calls for lib in (True, False)]

    def once(k, rep):
        c, lib = k
        return b.run(f"{tag}-{c}-{'with' if lib else 'control'}",
                     [b.prog("efb-pass"), "--case", c, "--count", count, "--rounds", prounds,
                      "--paired", 1], lib=lib)
    saved = b.runs
    if not b.quick:
        b.runs = max(b.runs, 5)
    try:
        res = b.alternate(keys, once)
    finally:
        b.runs = saved
    figs = {}
    for c in calls:
        w, ctl = res[(c, True)], res[(c, False)]
        figs[c] = (Fig([r["ns_libc"] for r in w]),
                   Fig([r["ns_program"] - r["ns_libc"] for r in w], tail=True),
                   Fig([r["ns_program"] - r["ns_libc"] for r in ctl], tail=True))
    return figs


PAIRED_HEAD = ["call", "ns/call libc", "ns added by the library", "control (no library)", "relative"]


def paired_cells(label, figs):
    """The cells of PAIRED_HEAD for one call of paired()."""
    libc, added, control = figs
    return [label, libc.fmt(digits=1), added.fmt(digits=1), control.fmt(digits=1),
            f"{added.med / libc.med * 100:+.1f}%"]
