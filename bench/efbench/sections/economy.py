"""Section 6, the wake-up economy: wake-ups per timer, median and p99
lateness against the request, 10 µs to 1 ms, for the loops of section 1
without and with the library, next to the limit of one wake-up per timer;
economy.png. The same runner measures tests/matrix/economy's cases (every
runtime, with targets)."""
import os
import statistics

from ..report import PLOT_HEAD, gnuplot, style, table
from ..runner import SLACK
from ..stats import Fig, dist, us
from .precision import loops, sleep_cmd


def economy(b):
    """Wake-ups per timer and lateness against the request: what precision costs."""
    requests = [50, 200, 700, 1000] if b.quick else [10, 20, 50, 100, 200, 300, 500, 700, 1000]
    count = 30 if b.quick else 200
    variants = loops(b)
    labels = {v[0]: v[1] for v in variants}
    keys = [v[0] for v in variants]

    results = {}
    for req in requests:
        def once(key, rep, req=req):
            how, lib = next((v[2], v[3]) for v in variants if v[0] == key)
            r = b.run(f"economy-{req}us-{key.replace('+', '-with')}", sleep_cmd(b, how, req, count),
                      lib=lib, raw=True)
            d = dist(r["samples"])
            r["late_p50"], r["late_p99"] = d["p50"] - req * 1000, d["p99"] - req * 1000
            r["wakes"] = r["nvcsw"] / r["count"]
            return r
        results[req] = b.alternate(keys, once)

    md = [f"Precision is cheap only if it does not poll: a loop that knows its deadline needs one "
          f"wake-up per timer, and the limit (`epoll_pwait2` of the request's length, slack {SLACK}) "
          f"spends exactly that. The same loops and the limit as in the precision section (asyncio "
          f"twice with the library: the policy guessing its deadlines, and the Python integration "
          f"passing them exactly), "
          f"{count} back-to-back sleeps a run, {b.runs} run{'s' if b.runs > 1 else ''} each, "
          f"alternating. Wake-ups are the process's voluntary context switches over the sleeps "
          f"(`getrusage` in the program) per sleep; lateness is the median elapsed time minus the "
          f"request. Library runs use the defaults but EPOLLFIX_SLACK={SLACK}.\n"]
    md.append("Wake-ups per timer (median of the runs, min–max):\n")
    rows = []
    for req in requests:
        rows.append([f"{req} µs"] + [Fig([r["wakes"] for r in results[req][k]]).fmt(digits=2)
                                    for k in keys])
    md.append(table(["request"] + [labels[k] for k in keys], rows))
    md.append("\nMedian lateness, µs (elapsed − requested):\n")
    rows = []
    for req in requests:
        rows.append([f"{req} µs"] + [us(Fig([r["late_p50"] for r in results[req][k]], tail=True))
                                    for k in keys])
    md.append(table(["request"] + [labels[k] for k in keys], rows))
    md.append("\np99 lateness, µs (the tail the library promises to keep no later than without "
              "it):\n")
    rows = []
    for req in requests:
        rows.append([f"{req} µs"] + [us(Fig([r["late_p99"] for r in results[req][k]], tail=True))
                                    for k in keys])
    md.append(table(["request"] + [labels[k] for k in keys], rows))
    worst = max((statistics.median([r["wakes"] for r in results[req][k]]), req, k)
                for req in requests for k in ("c+", "py+", "pyx", "ev+") if k in keys)
    md.append(f"\nMost wake-ups per timer with the library: {worst[0]:.1f} "
              f"({labels[worst[2]]}, {worst[1]} µs); the limit spends one.\n")

    with open(os.path.join(b.out, "economy.dat"), "w") as f:
        f.write("request " + " ".join(f'"{labels[k]}"' for k in keys) + " "
                + " ".join(f'"{labels[k]}"' for k in keys) + "\n")
        for req in requests:
            wakes = [statistics.median([r["wakes"] for r in results[req][k]]) for k in keys]
            late = [max(0.1, statistics.median([r["late_p50"] for r in results[req][k]]) / 1000)
                    for k in keys]
            f.write(f"{req} " + " ".join(f"{x:.3f}" for x in wakes) + " "
                    + " ".join(f"{x:.2f}" for x in late) + "\n")
    n = len(keys)
    err = gnuplot(PLOT_HEAD.replace("860,560", "860,860") + f"""set output 'economy.png'
set multiplot layout 2,1 title 'Wake-up economy: what a timer costs against the request (medians)'
set logscale x
set xtics (10,20,50,100,200,300,500,700,1000)
set xrange [8:1250]
set xlabel 'requested sleep (µs)'
set ylabel 'wake-ups per timer'
set yrange [0.8:*]
set logscale y
set key off
plot {', '.join(f"'economy.dat' using 1:{i + 2} with linespoints {style(k)} title columnheader({i + 2})" for i, k in enumerate(keys))}
set ylabel 'median lateness (µs)'
set key outside below maxrows 4
plot {', '.join(f"'economy.dat' using 1:{n + i + 2} with linespoints {style(k)} title columnheader({n + i + 2})" for i, k in enumerate(keys))}
unset multiplot
""", b.out)
    md.append("\n![wake-ups and lateness versus request](economy.png)\n" if not err else f"\n({err})\n")
    return "\n".join(md)
