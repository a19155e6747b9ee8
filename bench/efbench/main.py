"""The command bench/run: its options, the wait for a quiet machine, the
sections in their order (selected by number with --only), and the exit
status (1 only when a benchmark failed to run)."""
import argparse
import datetime
import os
import sys
import time

from .report import write_report
from .runner import ROOT, Bench
from .sections.clamp import clamp
from .sections.cost import cost
from .sections.economy import economy
from .sections.passthrough import passthrough
from .sections.precision import precision
from .sections.scale import scale

USAGE = """The epollfix benchmark suite: precision, cost, pass-through overhead, the
busy-loop clamp, scale and the wake-up economy, in one run on this machine.
See bench/README.md.

usage: bench/run [--quick] [--out DIR] [--build DIR] [--runs N] [--wait-load S]
                 [--only N,...]

Writes DIR/report.md, DIR/*.png (gnuplot) and DIR/raw/ (every sample, the
commands that made them). Default DIR: bench/results/<UTC timestamp>/.
Exits 1 only if a benchmark failed to run; missed targets are in the report."""


def main():
    ap = argparse.ArgumentParser(description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short run for CI: checks that it runs, not the targets")
    ap.add_argument("--out", help="results folder (default bench/results/<UTC timestamp>)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder (default build/)")
    ap.add_argument("--runs", type=int, help="runs per figure (default 5, quick 1)")
    ap.add_argument("--wait-load", type=float, default=0, metavar="S",
                    help="first wait up to S seconds for the 1-minute load average to fall below 0.7")
    ap.add_argument("--only", metavar="N,...",
                    help="run only these sections, by number (e.g. --only 6: the wake-up economy)")
    args = ap.parse_args()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    args.out = args.out or os.path.join(ROOT, "bench", "results", stamp)
    waited = 0.0
    while True:
        with open("/proc/loadavg") as f:
            load_start = f.read().split()[:3]
        if float(load_start[0]) < 0.7 or waited >= args.wait_load:
            break
        if waited == 0:
            print(f"bench: load {load_start[0]}, waiting up to {args.wait_load:.0f} s for it to fall "
                  "below 0.7", file=sys.stderr)
        time.sleep(5)
        waited += 5
    b = Bench(args)
    if waited:
        b.warnings.append(f"waited {waited:.0f} s for the load to fall below 0.7 before starting")
    t0 = time.monotonic()
    parts = [
        ("1. Precision", precision),
        ("2. Cost", cost),
        ("3. Pass-through overhead", passthrough),
        ("4. Busy-loop clamp", clamp),
        ("5. Scale", scale),
        ("6. Wake-up economy", economy),
    ]
    if args.only:
        wanted = {w.strip() for w in args.only.split(",")}
        parts = [(name, fn) for name, fn in parts if name.split(".")[0] in wanted]
        if not parts:
            sys.exit(f"bench/run: --only {args.only}: no such section (1 to 6)")
    body = [f"## {name}\n\n" + b.section(name, fn) for name, fn in parts]

    write_report(b, body, load_start, t0)
    print(f"bench: report in {os.path.join(b.out, 'report.md')}", file=sys.stderr)
    for t, m, ok in b.targets:
        print(f"  {'met   ' if ok else 'MISSED'} {t}: {m}", file=sys.stderr)
    for f in b.failures:
        print(f"bench: FAILED {f}", file=sys.stderr)
    sys.exit(1 if b.failures else 0)
