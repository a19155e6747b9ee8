#!/usr/bin/env python3
"""How late asyncio.sleep() wakes, for sleeps longer than a millisecond:
without the library, with it but the Python integration off (the policy's
guess: waits over EPOLLFIX_MAX_MS pass as asked), and with the integration
(the exact deadline, epoll_pwait2, at any length). Runs alternate between the
three; each figure is the median (min-max) lateness over all sleeps of all
runs, in us.

usage: bench/python_sleep_lateness.py [--build DIR] [--runs 3] [--sleeps-ms 1.5,10.3,250.7]

It makes a throwaway virtualenv from the build's python/site and runs
tests/progs/asyncio_sleep.py in it."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SLEEP_PY = os.path.join(HERE, "..", "tests", "progs", "asyncio_sleep.py")
# sleeps a run, by length: enough for a median, a run of at most ~5 s
COUNT = {1.5: 200, 10.3: 60, 250.7: 20}


def venv(path, site):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    py = os.path.join(path, "bin", "python")
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    for f in os.listdir(site):
        os.symlink(os.path.join(site, f), os.path.join(purelib, f))
    return py


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sleeps-ms", default="1.5,10.3,250.7")
    a = ap.parse_args()
    site = os.path.join(a.build, "python", "site")
    lib = os.path.abspath(os.path.join(a.build, "src", "libepollfix.so"))
    if not os.path.isdir(site):
        sys.exit(f"no {site}: build with CPython headers (meson builds python/)")
    hows = {
        "without the library": {},
        "library, integration off": {"LD_PRELOAD": lib, "EPOLLFIX_PYTHON": "off"},
        "library, integration on": {"LD_PRELOAD": lib},
    }
    with tempfile.TemporaryDirectory() as tmp:
        py = venv(os.path.join(tmp, "venv"), site)
        raw = os.path.join(tmp, "raw")
        for ms in (float(x) for x in a.sleeps_ms.split(",")):
            count = COUNT.get(ms, max(20, int(300 / ms)))
            late = {h: [] for h in hows}
            for _ in range(a.runs):
                for how, extra in hows.items():
                    env = dict(os.environ, **extra)
                    subprocess.run([py, SLEEP_PY, str(ms / 1e3), str(count), raw], env=env,
                                   check=True, capture_output=True)
                    with open(raw) as f:
                        late[how] += [int(x) / 1e3 - ms * 1e3 for x in f]
            for how, xs in late.items():
                print(f"{ms} ms, {how}: late {statistics.median(xs):.0f} us "
                      f"({min(xs):.0f}-{max(xs):.0f}), {len(xs)} sleeps")


if __name__ == "__main__":
    main()
