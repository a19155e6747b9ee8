"""Section 4, the busy-loop clamp: CPU of an idle zero-timeout loop without
the library, with it and the clamp off, and with EPOLLFIX_CLAMP; then the
latency from a write to the reader's read for a busy, a clamped and a
blocking reader (efb-busy)."""
import re

from ..report import table
from ..stats import Fig, dist, us


def clamp(b):
    dur = 200 if b.quick else 1000
    busy = b.prog("efb-busy")
    md = [f"### CPU of an idle zero-timeout loop\n\n`epoll_wait(timeout 0)` on an idle pipe for {dur} ms a run.\n"]
    variants = {"without": None, "with, clamp off": {}, "EPOLLFIX_CLAMP=100us": {"EPOLLFIX_CLAMP": "100us"},
                "EPOLLFIX_CLAMP=1ms": {"EPOLLFIX_CLAMP": "1ms"}}

    def once(k, rep):
        pol = variants[k]
        return b.run("clamp-idle-" + re.sub(r"\W+", "-", k), [busy, "--mode", "idle", "--duration-ms", dur],
                     lib=pol is not None, policy=pol)
    res = b.alternate(list(variants), once)
    rows = []
    for k in variants:
        rs = res[k]
        rows.append([k, Fig([r["cpu_ns"] / r["wall_ns"] * 100 for r in rs]).fmt(digits=1),
                     Fig([r["waits"] / r["wall_ns"] * 1e9 for r in rs]).fmt(digits=0),
                     Fig([r["nvcsw"] / r["wall_ns"] * 1e9 for r in rs]).fmt(digits=0)])
    md.append(table(["busy loop", "CPU %", "polls/s", "sleeps/s"], rows))

    md.append(f"\n### Event latency\n\nA writer thread writes its clock into a pipe every 1 ms ±50%; "
              f"the reader polls with timeout 0 (busy), the same under the clamp, or blocks with -1; "
              f"latency is from the write to the reader's return from read. {dur} ms a run.\n")
    variants = {"busy reader": ("busy", None), "busy, EPOLLFIX_CLAMP=100us": ("busy", {"EPOLLFIX_CLAMP": "100us"}),
                "busy, EPOLLFIX_CLAMP=1ms": ("busy", {"EPOLLFIX_CLAMP": "1ms"}),
                "blocking reader (-1)": ("block", None)}

    def once2(k, rep):
        reader, pol = variants[k]
        return b.run("clamp-latency-" + re.sub(r"\W+", "-", k),
                     [busy, "--mode", "latency", "--reader", reader, "--duration-ms", dur],
                     lib=pol is not None, policy=pol, raw=True)
    res = b.alternate(list(variants), once2)
    rows = []
    for k in variants:
        rs = res[k]
        ds = [dist(r["samples"]) for r in rs]
        rows.append([k, us(Fig([d["p50"] for d in ds])), us(Fig([d["p99"] for d in ds], tail=True)),
                     us(Fig([d["max"] for d in ds], tail=True)),
                     Fig([r["cpu_ns"] / r["wall_ns"] * 100 for r in rs]).fmt(digits=1)])
    md.append(table(["reader", "latency p50 µs", "p99 µs", "max µs", "CPU % (reader+writer)"], rows))
    return "\n".join(md)
