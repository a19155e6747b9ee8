"""Running the benchmark programs: the one runner of every measured command,
bench/run's sections and tests/matrix/economy's cases alike. Bench holds a
run's settings (the build folder, --runs, --quick, the results folder) and
what it gathers (targets, warnings, failures); it locates the library and the
programs, runs one measured command with or without the library (the preload
reaches that command only, every run is logged to raw/commands.log, and the
process is reaped with wait4 for its whole rusage), runs variants alternately
(ABBA), and runs a section so that its failure leaves the others running.
Failed is what a benchmark that did not run raises."""
import os
import re
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLACK_NS = 1000          # EPOLLFIX_SLACK of every run with the library, and the limit's slack
SLACK = "1us"


# What no measured command inherits from the caller's environment: the
# library's and the programs' own settings, and other preloads.
CLEAN_PREFIXES = ("EPOLLFIX_", "EFB_", "MX_")
CLEAN_NAMES = ("LD_PRELOAD", "COUNTWAITS_OUT", "EVENT_PRECISE_TIMER")


class Failed(Exception):
    pass


class Popen(subprocess.Popen):
    """subprocess.Popen that reaps with os.wait4 and keeps the child's rusage
    (its own and its waited-for descendants'): the wake-ups of a whole run,
    threads and children included, where a program does not count its own."""

    def _try_wait(self, wait_flags):
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            pid, sts = self.pid, 0
        else:
            if pid == self.pid:
                self.ef_rusage = ru
        return (pid, sts)


def alternate(variants, runs, once):
    """variants: list of keys. Runs once(key, rep) for every key, runs
    times, reversing the order every other round so drift hits both sides
    alike. Returns {key: [result per run]}."""
    out = {k: [] for k in variants}
    for rep in range(runs):
        order = variants if rep % 2 == 0 else list(reversed(variants))
        for k in order:
            out[k].append(once(k, rep))
    return out


class Bench:
    def __init__(self, args, lib_env=None):
        """lib_env: added to every run with the library (default: the bench's
        EPOLLFIX_SLACK; tests/matrix/economy measures the defaults)."""
        self.quick = args.quick
        self.lib_env = {"EPOLLFIX_SLACK": SLACK} if lib_env is None else lib_env
        self.build = os.path.abspath(args.build)
        self.out = os.path.abspath(args.out)
        self.raw = os.path.join(self.out, "raw")
        os.makedirs(self.raw, exist_ok=True)
        self.lib = os.path.join(self.build, "src", "libepollfix.so")
        self.bin = os.path.join(self.build, "bench")
        self.forward = os.path.join(self.bin, "libefb-forward.so")  # bench/forward.c: the floor
        self.runs = args.runs or (1 if self.quick else 5)
        self.failures = []
        self.warnings = []
        self.targets = []      # (target, measurement, met)
        self.log = open(os.path.join(self.raw, "commands.log"), "w")
        self.seq = 0
        self.py = real_python()
        # The build's venv holds the epollfix package (scripts/build lays it out):
        # its interpreter passes asyncio's exact timeouts to the library.
        self.py_exact = exact_python(os.path.join(self.build, "venv", "bin", "python"))
        for need in [self.lib, self.forward] + [self.prog(p) for p in ("efb-timer", "efb-pass", "efb-busy",
                                                                        "efb-cost")]:
            if not os.path.exists(need):
                sys.exit(f"bench/run: {need} is missing: run scripts/build (or ninja -C {args.build})")
        self.libev = os.path.join(os.path.dirname(self.bin), "tests", "progs", "ef-libev")
        self.has_libev = os.path.exists(self.libev)

    def prog(self, name):
        return os.path.join(self.bin, name)

    def env(self, lib, policy, extra=None, preload_var="LD_PRELOAD"):
        """lib: True for the library (with policy: its EPOLLFIX_* settings), or
        the path of another preload (policy: its variables). extra: the
        program's own variables; preload_var: where the preload goes (nginx's
        driver hands its own variable to nginx alone)."""
        env = {k: v for k, v in os.environ.items()
               if k not in CLEAN_NAMES and not k.startswith(CLEAN_PREFIXES)}
        env.update(extra or {})
        if lib:
            env[preload_var] = self.lib if lib is True else lib
            if lib is True:
                env.update(self.lib_env)
            env.update(policy or {})
        return env

    def run(self, tag, cmd, lib=False, policy=None, raw=False, timeout=300, env=None,
            preload_var="LD_PRELOAD", need="cpu_ns", report=None):
        """Runs one measured command; returns its summary fields (ints/floats,
        every NAME=NUMBER on its stdout), 'total_vcsw' and 'total_cpu_us' of the
        whole process (wait4), 'samples' (ns) when raw, and 'stderr'. The
        preload reaches only this command. need: a field without which the
        run failed (None: any output); report: the prefixes of the stdout
        lines read (None: every line)."""
        self.seq += 1
        rawfile = os.path.join(self.raw, f"{self.seq:04d}-{tag}.txt") if raw else None
        cmd = [str(c) for c in cmd]
        if raw:
            cmd += [rawfile] if cmd[0] in (self.py, self.py_exact) else ["--raw", rawfile]
        env = self.env(lib, policy, env, preload_var)
        shown = " ".join(f"{k}={env[k]}" for k in sorted(env)
                         if k == preload_var or k.startswith(CLEAN_PREFIXES))
        self.log.write(f"{self.seq:04d} {tag}: {'env ' + shown + ' ' if shown else ''}"
                       f"{' '.join(cmd)}\n")
        self.log.flush()
        try:
            p = Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                      errors="replace")
        except OSError as e:
            raise Failed(f"{tag}: {e}")
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise Failed(f"{tag}: timed out after {timeout}s")
        if p.returncode != 0:
            raise Failed(f"{tag}: exit {p.returncode}: {stderr.strip()[-400:]}")
        fields = {}
        lines = [x for x in stdout.splitlines() if not report or x.startswith(report)]
        for m in re.finditer(r"(\w+)=(-?[0-9.]+)", "\n".join(lines)):
            fields[m.group(1)] = float(m.group(2))
        if need and need not in fields:
            raise Failed(f"{tag}: no summary line in {stdout!r}")
        ru = getattr(p, "ef_rusage", None)
        if ru is not None:
            fields["total_vcsw"] = ru.ru_nvcsw
            fields["total_cpu_us"] = int((ru.ru_utime + ru.ru_stime) * 1e6)
        fields["stderr"] = stderr
        if raw:
            with open(rawfile) as f:
                fields["samples"] = [int(x) for x in f if x.strip()]
            if not fields["samples"]:
                raise Failed(f"{tag}: no samples")
        if stderr.strip():
            self.log.write(f"     stderr: {stderr.strip()[:300]}\n")
        return fields

    def alternate(self, variants, once):
        """alternate(), self.runs times."""
        return alternate(variants, self.runs, once)

    def section(self, name, fn):
        t0 = time.monotonic()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        try:
            text = fn(self)
        except Exception as e:  # a benchmark, or this script, failed: the other sections still run
            if not isinstance(e, Failed):
                traceback.print_exc()
            self.failures.append(f"{name}: {e!r}" if not isinstance(e, Failed) else f"{name}: {e}")
            text = f"**This section failed to run:** `{e}`\n"
        return text + f"\n<sub>section time {time.monotonic() - t0:.0f} s</sub>\n"


def real_python():
    """The real CPython (python3 on PATH may be a pyenv shim, a bash script:
    LD_PRELOAD must reach the interpreter, not a shell)."""
    try:
        p = subprocess.run(["python3", "-c", "import sys; print(sys.executable)"],
                           capture_output=True, text=True, timeout=60)
        exe = p.stdout.strip()
        if p.returncode == 0 and exe and os.path.exists(exe):
            return exe
    except OSError:
        pass
    return sys.executable


def exact_python(exe):
    """exe when it is a CPython that imports the epollfix package, else None."""
    try:
        p = subprocess.run([exe, "-c", "import epollfix._epollfix"], capture_output=True,
                           timeout=60, env={k: v for k, v in os.environ.items()
                                            if k != "LD_PRELOAD" and not k.startswith("EPOLLFIX_")})
        return exe if p.returncode == 0 else None
    except OSError:
        return None
