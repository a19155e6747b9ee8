"""The matrix's report line for the Python programs."""
import os
import time


def write_fires(fires_ns):
    """With MX_FIRES=PATH, the fire times (perf_counter_ns is CLOCK_MONOTONIC
    on Linux), one a line, for tests/matrix/pattern."""
    path = os.environ.get("MX_FIRES")
    if path:
        with open(path, "w") as f:
            f.write("".join(f"{t}\n" for t in fires_ns))


def report(late_ns, started_ns, early=False, extra=""):
    """early: also print early=N, the fires more than 100 us before the
    requested time (a wait that returned before its timeout); extra: more
    ' key=value' fields for the end of the line."""
    late = sorted(late_ns)
    n = len(late)
    p50 = late[n // 2] // 1000 if n else 0
    p90 = late[n * 9 // 10] // 1000 if n else 0
    p99 = late[n * 99 // 100] // 1000 if n else 0
    least = late[0] // 1000 if n else 0
    elapsed = (time.perf_counter_ns() - started_ns) // 1000000
    early_field = f" early={sum(1 for x in late if x < -100000)}" if early else ""
    print(f"fires={n} lateness_p50_us={p50} lateness_p90_us={p90} lateness_p99_us={p99} "
          f"lateness_min_us={least} "
          f"elapsed_ms={elapsed}{early_field}{extra}", flush=True)
