"""Section 1, precision: the elapsed time of a requested sleep, 10 µs to 1
ms, through the C epoll loop, CPython asyncio (also with the Python
integration's exact timeouts) and libev, without and with
the library, against the limit (epoll_pwait2 of the same deadline); 50 µs in
detail with histograms, and the plots sweep.png and detail50.png. PREC, the
loops, and the commands that run them are section 6's too."""
import os
import statistics

from ..report import PLOT_HEAD, gnuplot, style, table
from ..runner import ROOT, SLACK, SLACK_NS
from ..stats import Fig, dist, histogram, us

PREC = [  # key, label, how, with library
    ("c", "C epoll loop", "c", False),
    ("c+", "C epoll loop + epollfix", "c", True),
    ("py", "CPython asyncio", "py", False),
    ("py+", "CPython asyncio + epollfix", "py", True),
    ("pyx", "CPython asyncio + epollfix, exact timeouts", "pyx", True),
    ("ev", "libev", "ev", False),
    ("ev+", "libev + epollfix", "ev", True),
    ("limit", "limit: epoll_pwait2, slack 1us", "limit", False),
]


def loops(b):
    """The rows of PREC this machine runs: libev's only where it was built, the
    Python integration's (exact timeouts, no guess) only where the build's venv
    holds the package."""
    return [v for v in PREC if (v[2] != "ev" or b.has_libev) and (v[2] != "pyx" or b.py_exact)]


def sleep_cmd(b, how, req, count):
    """The command that sleeps req µs, count times, in the loop how (PREC's
    third field)."""
    if how == "c":
        return [b.prog("efb-timer"), "--mode", "loop", "--sleep-us", req, "--count", count]
    if how == "limit":
        return [b.prog("efb-timer"), "--mode", "pwait2", "--slack", SLACK_NS,
                "--sleep-us", req, "--count", count]
    if how == "ev":
        return [b.libev, "--sleep-us", req, "--count", count]
    return [b.py_exact if how == "pyx" else b.py, os.path.join(ROOT, "tests", "progs", "asyncio_sleep.py"),
            str(int(req) * 1e-6), count]


def precision(b):
    requests = [10, 50, 200, 1000] if b.quick else [10, 20, 50, 100, 200, 500, 1000]
    variants = loops(b)
    labels = {v[0]: v[1] for v in variants}

    results = {}  # req -> key -> list of (dist, summary)
    for req in requests:
        count = (100 if b.quick else 1000) if req == 50 else (30 if b.quick else 200)

        def once(key, rep, req=req, count=count):
            how, lib = next((v[2], v[3]) for v in variants if v[0] == key)
            r = b.run(f"precision-{req}us-{key.replace('+', '-with')}",
                      sleep_cmd(b, how, req, count), lib=lib, raw=True)
            r["dist"] = dist(r["samples"])
            return r
        results[req] = b.alternate([v[0] for v in variants], once)

    keys = [v[0] for v in variants]
    d50 = results[50]
    md = []
    md.append(f"A sleep of the requested length, timed from before the call to after the wake-up; "
              f"{len(d50[keys[0]][0]['samples'])} sleeps a run at 50 µs "
              f"({len(results[requests[0]][keys[0]][0]['samples'])} at the other lengths), "
              f"{b.runs} run{'s' if b.runs > 1 else ''} each, with and without the library alternating. The C loop waits "
              f"`epoll_wait(ceil(remaining ms))` and re-checks its clock, as CPython, libev, mio and "
              f"Redis do. The limit is the same deadline waited for with `epoll_pwait2` directly "
              f"with timer slack {SLACK} (the library's EPOLLFIX_SLACK in these runs).\n")
    md.append("### 50 µs in detail\n")
    md.append("Elapsed µs: median of the runs' figures (min–max of the runs).\n")
    rows = []
    for k in keys:
        runs = d50[k]
        row = [labels[k]] + [us(Fig([r["dist"][q] for r in runs], tail=q in ("p99", "max")))
                              for q in ("p50", "p90", "p99", "max")]
        row.append(us(Fig([r["cpu_ns"] / r["count"] for r in runs])))
        row.append(Fig([r["waits"] / r["count"] for r in runs]).fmt(digits=1) if k in ("c", "c+", "limit") else "–")
        rows.append(row)
    md.append(table(["50 µs sleep", "p50", "p90", "p99", "max", "CPU µs per sleep", "epoll calls per sleep"], rows))

    c_with = Fig([r["dist"]["p50"] for r in d50["c+"]])
    lim = Fig([r["dist"]["p50"] for r in d50["limit"]])
    ratio = c_with.med / lim.med
    b.targets.append(("1. C loop with the library within 10% of the limit at the median (50 µs)",
                      f"p50 {c_with.med / 1000:.1f} µs vs limit {lim.med / 1000:.1f} µs: {ratio:.3f}x",
                      ratio <= 1.10))
    py0 = Fig([r["dist"]["p50"] for r in d50["py"]])
    py1 = Fig([r["dist"]["p50"] for r in d50["py+"]])
    speed = py0.med / py1.med
    b.targets.append(("1. asyncio with the library at least 8x faster than without at 50 µs (p50)",
                      f"p50 {py0.med / 1000:.0f} µs without, {py1.med / 1000:.1f} µs with: {speed:.1f}x",
                      speed >= 8))

    md.append("\nHistograms of all 50 µs sleeps of all runs, pooled:\n")
    for k in keys:
        pooled = [x for r in d50[k] for x in r["samples"]]
        md.append(f"**{labels[k]}**\n\n```\n{histogram(pooled)}\n```\n")

    md.append("### Sweep\n")
    md.append("A request shorter than EPOLLFIX_SUBMS (50 µs) still waits SUBMS under the library: "
              "there the limit is out of reach by design.\n")
    md.append("Median elapsed µs (p50 of each run, median over runs); the last column is the C loop "
              "with the library over the limit.\n")
    rows = []
    for req in requests:
        f = {k: Fig([r["dist"]["p50"] for r in results[req][k]]) for k in keys}
        rows.append([f"{req} µs"] + [us(f[k]) for k in keys] + [f"{f['c+'].med / f['limit'].med:.2f}x"])
    md.append(table(["request"] + [labels[k] for k in keys] + ["C+lib / limit"], rows))
    md.append("\np99 elapsed µs:\n")
    rows = []
    for req in requests:
        rows.append([f"{req} µs"] + [us(Fig([r["dist"]["p99"] for r in results[req][k]], tail=True)) for k in keys])
    md.append(table(["request"] + [labels[k] for k in keys], rows))

    # plots
    with open(os.path.join(b.out, "sweep.dat"), "w") as f:
        f.write("request " + " ".join(f'"{labels[k]}"' for k in keys) + "\n")
        for req in requests:
            late = [max(0.1, statistics.median([r["dist"]["p50"] for r in results[req][k]]) / 1000 - req)
                    for k in keys]
            f.write(f"{req} " + " ".join(f"{x:.2f}" for x in late) + "\n")
    err = gnuplot(PLOT_HEAD + f"""set output 'sweep.png'
set title 'Lateness of a sleep vs the sleep requested (median)'
set logscale xy
set xlabel 'requested sleep (µs)'
set ylabel 'median lateness: elapsed - requested (µs)'
set xtics (10,20,50,100,200,500,1000)
plot {', '.join(f"'sweep.dat' using 1:{i + 2} with linespoints {style(k)} title columnheader({i + 2})" for i, k in enumerate(keys))}
""", b.out)
    md.append("\n![lateness versus request](sweep.png)\n" if not err else f"\n({err})\n")
    with open(os.path.join(b.out, "detail50.dat"), "w") as f:
        for k in keys:
            pooled = sorted(x for r in d50[k] for x in r["samples"])
            f.write(f'"{labels[k]}"\n')
            n = len(pooled)
            step = max(1, n // 400)
            for i in range(0, n, step):
                f.write(f"{pooled[i] / 1000:.2f} {(i + 1) / n:.4f}\n")
            f.write(f"{pooled[-1] / 1000:.2f} 1\n\n\n")
    err = gnuplot(PLOT_HEAD + f"""set output 'detail50.png'
set title '50 µs sleep: distribution of the elapsed time (all runs pooled)'
set logscale x
set xlabel 'elapsed (µs)'
set ylabel 'fraction of sleeps'
set yrange [0:1]
plot {', '.join(f"'detail50.dat' index {i} using 1:2 with lines {style(k)} title columnheader(1)" for i, k in enumerate(keys))}
""", b.out)
    md.append("\n![50 µs distribution](detail50.png)\n" if not err else f"\n({err})\n")
    return "\n".join(md)
