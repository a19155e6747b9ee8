"""What the run writes: Markdown tables, the plots (gnuplot, with a style
per loop), the description of the machine and of the run, and report.md
itself: the machine, the targets, the warnings, then the sections."""
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import time

from .runner import ROOT, SLACK, SLACK_NS
from .stats import SPREAD_WARN


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def gnuplot(script, outdir):
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed: no plot"
    p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True, cwd=outdir)
    if p.returncode != 0:
        return f"gnuplot failed: {p.stderr.strip()[-300:]}"
    return None


PLOT_HEAD = """set terminal pngcairo size 860,560 font 'DejaVu Sans,10' noenhanced
set grid
set key outside below maxrows 4
"""
COLORS = {"c": "#1f77b4", "py": "#d62728", "pyx": "#ff7f0e", "ev": "#2ca02c", "limit": "#000000"}


def style(key):
    """A loop's colour; dashed without the library, solid with it; the limit thick."""
    base = key.rstrip("+")
    dash = 2 if key in ("c", "py", "ev") else 1
    width = 3 if key == "limit" else 2
    return f"lc rgb '{COLORS.get(base, '#888888')}' dt {dash} lw {width}"


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


def machine(b, load_start):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else ""
    except OSError:
        pass
    try:
        with open("/proc/self/timerslack_ns") as f:
            slack = f.read().strip()
    except OSError:
        slack = "?"
    libc = " ".join(platform.libc_ver())
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "include", "bench"])
    with open("/proc/loadavg") as f:
        load_end = f.read().split()[:3]
    pyver = sh([b.py, "-c", "import platform; print(platform.python_version())"])
    return table(["", ""], [
        ["date (UTC)", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")],
        ["kernel", f"{platform.system()} {platform.release()} {platform.machine()}"],
        ["libc", libc],
        ["CPUs", f"{os.cpu_count()} ({cpu})"],
        ["timer slack", f"default thread slack {slack} ns; library runs EPOLLFIX_SLACK={SLACK} "
                        f"(except where a row says otherwise); limit runs PR_SET_TIMERSLACK {SLACK_NS} ns"],
        ["library", f"{b.lib} (epollfix commit {commit}{', work tree modified' if dirty else ''})"],
        ["CPython", f"{b.py} {pyver}"],
        ["libev", "yes" if b.has_libev else "not built: no libev"],
        ["load average (1, 5, 15 min)", f"start {' '.join(load_start)}, end {' '.join(load_end)}"],
        ["mode", f"{'quick' if b.quick else 'full'}, {b.runs} run{'s' if b.runs > 1 else ''} per figure unless a section says otherwise"],
        ["command", " ".join(["bench/run"] + sys.argv[1:])],
    ])


def write_report(b, body, load_start, t0):
    """Writes b.out/report.md: the machine, the targets, the warnings, then
    body, the sections' Markdown."""
    md = ["# epollfix benchmark report\n", machine(b, load_start)]
    if b.quick:
        md.append("\n**Quick mode**: few samples and one run per figure; this checks that the benchmarks "
                  "run. The targets below are not meaningful in this mode.\n")
    if float(load_start[0]) > 0.7:
        b.warnings.append(f"the 1-minute load was {load_start[0]} at the start: other work shared the CPUs")
    with open("/proc/loadavg") as f:
        load_end = f.read().split()[0]
    if float(load_end) > 1.0:
        b.warnings.append(f"the 1-minute load was {load_end} at the end: other work shared the CPUs")
    md.append("\n## Targets\n")
    md.append(table(["target", "measurement (medians)", "result"],
                    [[t, m, "met" if ok else "**missed**"] for t, m, ok in b.targets]))
    md.append("\nEvery figure is the median of repeated runs with the min–max of the runs in brackets; "
              f"⚠ marks a figure whose runs spread by more than {SPREAD_WARN:.0%} of the median. "
              "Raw samples and the exact commands are under raw/.\n")
    wide = sum(x.count("⚠") for x in body)
    if wide:
        b.warnings.append(f"{wide} figure(s) spread widely between runs (⚠): read them as rough")
    if b.warnings or b.failures:
        md.append("\n## Warnings\n")
        md += [f"- {w}" for w in b.warnings] + [f"- **failed:** {f}" for f in b.failures]
        md.append("")
    md += ["\n" + x for x in body]
    md.append(f"\n<sub>total time {time.monotonic() - t0:.0f} s</sub>\n")
    with open(os.path.join(b.out, "report.md"), "w") as f:
        f.write("\n".join(md))
