"""Section 5, scale: the 50 µs sleep on 1, 2, 8 and 64 threads, each in its
own loop, without and with the library, the limit, and the floor that reads
the clock; p50/p99, wake-ups, CPU per wake-up, scale.png, and the 64-thread
target."""
import os
import re
import statistics

from ..report import PLOT_HEAD, gnuplot, style, table
from ..runner import SLACK_NS
from ..stats import Fig, dist, us


def scale(b):
    dur = 200 if b.quick else 1000
    threads = [1, 2, 8, 64]
    runs = b.runs if b.quick else min(b.runs, 3)
    saved, b.runs = b.runs, runs
    md = [f"Each thread sleeps 50 µs over and over in its own loop with its own epoll fd, for "
          f"{dur} ms; {os.cpu_count()} CPUs. Elapsed figures pool the sleeps of all threads of a run; "
          f"wake-ups are voluntary context switches of the process. {runs} run(s).\n"]
    # The floor (section 2, bench/forward.c) is measured beside them, not plotted.
    floor_key = "C loop + floor: forward + 2 clock reads"
    variants = {"C loop": (["--mode", "loop"], False, None),
                "C loop + epollfix": (["--mode", "loop"], True, None),
                "limit (epoll_pwait2, slack 1us)": (["--mode", "pwait2", "--slack", SLACK_NS], False, None),
                floor_key: (["--mode", "loop"], b.forward, {"EFB_FORWARD_SLACK": str(SLACK_NS),
                                                          "EFB_FORWARD_CLOCKS": "1"})}
    md.append(f"*{floor_key}* runs the C loop under the preload of section 2 that only turns its "
              f"`epoll_wait(1)` into `epoll_pwait2(50 µs)` and reads the clock before and after: the "
              f"least a library that learns from wait lengths can cost.\n")
    rows = []
    plot = []
    floor64 = None
    try:
        for t in threads:
            def once(k, rep, t=t):
                extra, lib, pol = variants[k]
                return b.run(f"scale-{t}-" + re.sub(r"\W+", "-", k),
                             [b.prog("efb-timer"), *extra, "--sleep-us", 50, "--threads", t,
                              "--duration-ms", dur], lib=lib, policy=pol, raw=True)
            res = b.alternate(list(variants), once)
            line = [t]
            for k in variants:
                rs = res[k]
                ds = [dist(r["samples"]) for r in rs]
                p50 = Fig([d["p50"] for d in ds])
                per_wake = statistics.median(r["cpu_ns"] / max(1, r["nvcsw"]) for r in rs) / 1000
                if k == floor_key:
                    floor64 = per_wake if t == 64 else floor64
                else:
                    line += [p50.med / 1000, per_wake]
                rows.append([t, k, us(p50), us(Fig([d["p99"] for d in ds], tail=True)),
                             Fig([r["nvcsw"] / r["wall_ns"] * 1e9 for r in rs]).fmt(digits=0),
                             Fig([r["cpu_ns"] / r["wall_ns"] * 100 for r in rs]).fmt(digits=1),
                             us(Fig([r["cpu_ns"] / max(1, r["nvcsw"]) for r in rs]))])
            plot.append(line)
    finally:
        b.runs = saved
    md.append(table(["threads", "loop", "p50 µs", "p99 µs", "wake-ups/s", "CPU % (of one CPU)",
                     "CPU µs per wake-up"], rows))
    for line in plot:
        if line[0] == 64:  # [threads, p50, cpu/wake] for each plotted variant in order
            ratio = line[4] / line[6]
            floor = f"; the floor that reads the clock: {floor64 / line[6]:.2f}x" if floor64 else ""
            b.targets.append(("5. CPU per upgraded wait at 64 threads at most 1.10x the limit's "
                              "(CPU per wake-up)", f"{line[4]:.2f} µs vs {line[6]:.2f} µs: {ratio:.3f}x"
                              f"{floor}", ratio <= 1.10))
    with open(os.path.join(b.out, "scale.dat"), "w") as f:
        f.write("threads " + " ".join(f'"{k}" "{k}"' for k in variants if k != floor_key) + "\n")
        for line in plot:
            f.write(" ".join(f"{x:.2f}" if isinstance(x, float) else str(x) for x in line) + "\n")
    styles = ["c", "c+", "limit"]
    err = gnuplot(PLOT_HEAD + f"""set output 'scale.png'
set multiplot layout 1,2 title '50 µs sleep on N threads, each in its own loop'
set logscale xy
set xlabel 'threads'
set xtics (1,2,8,64)
set title 'median elapsed'
set ylabel 'p50 elapsed (µs)'
plot {', '.join(f"'scale.dat' using 1:{2 * i + 2} with linespoints {style(k)} title columnheader({2 * i + 2})" for i, k in enumerate(styles))}
set title 'CPU per wake-up'
set ylabel 'CPU µs per wake-up'
unset logscale y
set yrange [0:*]
plot {', '.join(f"'scale.dat' using 1:{2 * i + 3} with linespoints {style(k)} title columnheader({2 * i + 3})" for i, k in enumerate(styles))}
unset multiplot
""", b.out)
    md.append("\n![scale](scale.png)\n" if not err else f"\n({err})\n")
    return "\n".join(md)
