#!/usr/bin/env python3
"""The Python integration's costs, alternating with and without it, as medians
(min-max) of RUNS runs:

  - per select.epoll.poll(0) on an idle epoll fd: the best of 5 loops of N polls
    a run, the library preloaded, integration on and off (EPOLLFIX_PYTHON);
  - interpreter start-up (`python -c pass`), package installed and the library
    NOT loaded, against a virtualenv without the package.

usage: bench/python_poll_cost.py [--build DIR] [--runs 5] [--polls 1000000]

It makes two throwaway virtualenvs from the build's python/site (meson lays it
out), prints one line per figure and "extra_ns_per_poll=.. extra_start_ms=..". """
import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

LOOP = """
import select, sys, time
ep, n, best = select.epoll(), int(sys.argv[1]), None
for _ in range(5):
    t = time.perf_counter_ns()
    for _ in range(n):
        ep.poll(0)
    d = (time.perf_counter_ns() - t) / n
    best = d if best is None or d < best else best
print(best)
"""


def venv(path, site=None):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    py = os.path.join(path, "bin", "python")
    if site:
        purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip()
        for f in os.listdir(site):
            os.symlink(os.path.join(site, f), os.path.join(purelib, f))
    return py


def fig(xs, unit, digits=1):
    return f"{statistics.median(xs):.{digits}f} {unit} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--polls", type=int, default=1000000)
    a = ap.parse_args()
    site = os.path.join(a.build, "python", "site")
    lib = os.path.abspath(os.path.join(a.build, "src", "libepollfix.so"))
    if not os.path.isdir(site):
        sys.exit(f"no {site}: build with CPython headers (meson builds python/)")
    with tempfile.TemporaryDirectory() as tmp:
        with_pkg = venv(os.path.join(tmp, "pkg"), site)
        bare = venv(os.path.join(tmp, "bare"))
        env = dict(os.environ, LD_PRELOAD=lib)
        on, off, start_pkg, start_bare = [], [], [], []
        for _ in range(a.runs):
            for which, out in (("on", on), ("off", off)):
                e = dict(env, EPOLLFIX_PYTHON=which)
                r = subprocess.run([with_pkg, "-c", LOOP, str(a.polls)], env=e, check=True,
                                   capture_output=True, text=True)
                out.append(float(r.stdout))
            for py, out in ((bare, start_bare), (with_pkg, start_pkg)):
                xs = []
                for _ in range(20):
                    t = time.perf_counter()
                    subprocess.run([py, "-c", "pass"], check=True)
                    xs.append((time.perf_counter() - t) * 1e3)
                out.append(statistics.median(xs))
    print(f"poll(0), integration on:  {fig(on, 'ns')}")
    print(f"poll(0), integration off: {fig(off, 'ns')}")
    print(f"start-up, package, no library: {fig(start_pkg, 'ms', 2)}")
    print(f"start-up, no package:          {fig(start_bare, 'ms', 2)}")
    extra = [x - y for x, y in zip(on, off)]
    extra_start = [x - y for x, y in zip(start_pkg, start_bare)]
    print(f"extra_ns_per_poll={statistics.median(extra):.1f} extra_start_ms={statistics.median(extra_start):.2f}")


if __name__ == "__main__":
    main()
