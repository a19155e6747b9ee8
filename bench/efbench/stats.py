"""Statistics of the samples and the runs: percentiles and the distribution
of one run's samples (pct, dist), one figure over repeated runs with its
spread (Fig: median, min, max, and the warning mark for a wide spread), how
figures are written (us, human_ns), and the text histogram of the precision
section."""
import math
import statistics

SPREAD_WARN = 0.25       # (max - min) / median of a figure above this earns a warning


def pct(sorted_ns, q):
    if not sorted_ns:
        return float("nan")
    i = min(len(sorted_ns) - 1, max(0, math.ceil(q * len(sorted_ns)) - 1))
    return sorted_ns[i]


def dist(samples):
    s = sorted(samples)
    return {"p50": pct(s, .5), "p90": pct(s, .9), "p99": pct(s, .99), "max": s[-1],
            "min": s[0], "mean": sum(s) / len(s)}


class Fig:
    """One figure over repeated runs: median, min, max."""

    def __init__(self, values, tail=False):
        self.values = [v for v in values if v is not None and not math.isnan(v)]
        self.tail = tail  # a tail figure (p99, max) or a difference: no spread warning
        self.med = statistics.median(self.values) if self.values else float("nan")
        self.lo = min(self.values) if self.values else float("nan")
        self.hi = max(self.values) if self.values else float("nan")

    def wide(self):
        return not self.tail and len(self.values) > 1 and self.med > 0 and (self.hi - self.lo) / self.med > SPREAD_WARN

    def fmt(self, scale=1.0, digits=None, unit=""):
        def f(v):
            v = v / scale
            if digits is not None:
                return f"{v:.{digits}f}"
            return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
        if not self.values:
            return "n/a"
        text = f"{f(self.med)}{unit}"
        if len(self.values) > 1:
            text += f" ({f(self.lo)}–{f(self.hi)})"
        if self.wide():
            text += " ⚠"
        return text


def us(fig):
    return fig.fmt(1000.0)


def human_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.3g}ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g}µs"
    return f"{ns:.3g}ns"


def histogram(samples, width=40, bins=14):
    """A text histogram in the manner of hrtime's: a summary line, then one bar
    per bin of equal width between the minimum and the 99th percentile, the
    rest in a last bin."""
    s = sorted(samples)
    n = len(s)
    lines = [f"  avg {human_ns(sum(s) / n)};  min {human_ns(s[0])};  p50 {human_ns(pct(s, .5))};"
             f"  max {human_ns(s[-1])};",
             f"  p90 {human_ns(pct(s, .9))};  p99 {human_ns(pct(s, .99))};"
             f"  p999 {human_ns(pct(s, .999))};  p9999 {human_ns(pct(s, .9999))};  n {n}"]
    lo, hi = s[0], pct(s, .99)
    step = max(1.0, (hi - lo) / bins)
    mag = 10 ** math.floor(math.log10(step))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= step)
    start = math.floor(lo / step) * step
    edges = []
    e = start
    while e <= hi and len(edges) < bins + 2:
        edges.append(e)
        e += step
    counts = [0] * (len(edges) + 1)
    for v in s:
        k = int((v - start) // step)
        counts[min(k, len(edges))] += 1
    if counts[-1] == 0:
        counts.pop()
    top = max(counts)
    parts = " ▏▎▍▌▋▊▉█"
    for i, c in enumerate(counts):
        label = human_ns(edges[i]) if i < len(edges) else "≥" + human_ns(start + step * len(edges))
        eighths = round(c / top * width * 8)
        bar = "█" * (eighths // 8) + (parts[eighths % 8] if eighths % 8 else "")
        if c and not bar:
            bar = "▏"
        lines.append(f"  {label:>9} [{c:6d}] {bar}")
    return "\n".join(lines)
