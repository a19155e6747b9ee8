"""Sub-millisecond epoll waits for Python programs: the epollfix preload
library and its command, packaged in a wheel.

    $ epollfix python app.py           # the C command, with every option
    $ python -m epollfix --check       # does epoll_pwait2 work here?

For an entry point you cannot wrap (a console script, a service started by
something else), call enable() first thing: select.epoll and every loop built
on it (asyncio, Tornado, trio) then wait exactly, through the wheel's library
loaded in this process, with no re-exec. reexec() instead re-executes the
interpreter once with the library preloaded, which also reaches the epoll
calls of C extensions.

    import epollfix
    epollfix.enable()

With the library preloaded, the exact waits are on from the interpreter's
start (epollfix.pth); EPOLLFIX_PYTHON=off leaves them off.
"""
import os
import stat
import sys
import warnings

from ._version import __version__

__all__ = ["__version__", "command_path", "disable", "enable", "library_path", "loaded", "reexec",
           "REEXEC_MARK"]

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")

# Set in the environment of the re-executed interpreter: a process that finds
# it there is the result of reexec(), so it must not exec again.
REEXEC_MARK = "EPOLLFIX_REEXEC"

# What reexec() decided in this process (None: not called yet). A second call
# repeats the first answer, so calling it twice cannot exec twice.
_decided = None


def library_path():
    """The package's libepollfix.so: the wheel's own copy, or else the
    system's (the Debian package's, found by the dynamic loader's search)."""
    own = os.path.join(_HERE, "libepollfix.so")
    return os.path.realpath(own) if os.path.exists(own) else "libepollfix.so"


def enable(path=None):
    """Exact timeouts for select.epoll and selectors.EpollSelector in this
    process. With the library preloaded this is what the interpreter's start
    already did. Without it, the library at path (default: library_path()) is
    loaded here and the waits of select.epoll go through it, so its fallback,
    its report (EPOLLFIX_STATS) and `epollfix status` work as preloaded; the
    epoll calls of C extensions (uvloop, gevent's loops) are not reached.
    Returns True when the exact waits are on in this interpreter (each
    interpreter, the main one and every subinterpreter, calls it for its own);
    else one RuntimeWarning says why, and False."""
    try:
        from . import _epollfix
    except ImportError as e:
        _enable_warn("the extension does not load in this interpreter (" + str(e) + ")")
        return False
    if not _epollfix.preloaded():
        _epollfix.load(path or library_path())
    if _epollfix.activate():
        return True
    _enable_warn("this interpreter's select.epoll is missing or not CPython's own")
    return False


def _enable_warn(why):
    warnings.warn("epollfix.enable(): " + why + "; its waits stay CPython's own",
                  RuntimeWarning, stacklevel=3)


def disable():
    """select.epoll and selectors.EpollSelector as CPython has them."""
    from . import _epollfix
    _epollfix.deactivate()


def command_path():
    """The wheel's epollfix command (it preloads the library beside it), or
    else the system's (the Debian package's /usr/bin/epollfix)."""
    own = os.path.join(_HERE, "epollfix")
    if os.path.exists(own):
        return own
    import shutil
    return shutil.which("epollfix") or "/usr/bin/epollfix"


def loaded():
    """True when a libepollfix.so (this wheel's or any other, such as one
    preloaded host-wide from /etc/ld.so.preload) is mapped in this process."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[5:]
                if path and os.path.basename(path[0]) == "libepollfix.so":
                    return True
    except OSError:
        pass
    return False


def _argv():
    # sys.orig_argv (3.10+) is the interpreter's own command line, with its
    # options and -m or -c; /proc/self/cmdline holds the same before 3.10.
    # argv[0] becomes sys.executable: a bare "python3" would be looked up in
    # PATH again, and might find another interpreter.
    argv = getattr(sys, "orig_argv", None)
    if not argv:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [os.fsdecode(a) for a in f.read().split(b"\0")[:-1]]
    return [sys.executable] + list(argv[1:])


def _not_rerunnable():
    """Why a new interpreter given the same command line would not run the
    same program; None when it would. A script read from standard input (a
    file redirected, a pipe, the interactive prompt) or from a pipe named on
    the command line (/dev/stdin, a shell's <(...)) is used up: the new
    interpreter would find nothing to run and exit at once."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 in ("-c", "-m"):  # the code, or the module to import, is on the command line
        return None
    if argv0 in ("", "-"):
        return "the program was read from standard input, which a new interpreter cannot read again"
    try:
        mode = os.stat(argv0).st_mode
    except OSError:
        return "its script " + argv0 + " is not there to run again"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "its script " + argv0 + " is not a file (a pipe or a terminal): it cannot be read again"
    return None


def _warn(why):
    warnings.warn("epollfix.reexec(): " + why + "; running without the library",
                  RuntimeWarning, stacklevel=3)


def reexec():
    """Re-execute this interpreter, with the same command line, with the
    wheel's library first in LD_PRELOAD.

    Returns True at once when the library is already loaded in this process.
    Otherwise it does not return: the process is replaced, and in the new one
    reexec() returns True. When the library could not be loaded even so (a
    static or setuid interpreter, secure-execution mode, a path LD_PRELOAD
    cannot hold), it warns once and returns False rather than exec again:
    the environment carries EPOLLFIX_REEXEC=1 across the exec for that.
    It re-executes only a program the new interpreter can run again: -c, -m
    or a script file; a program read from standard input (`python < app.py`,
    a pipe) or from a pipe it names gets one warning and False instead.
    """
    global _decided
    if _decided is not None:
        return _decided
    # The mark is for this process only: its children start afresh.
    marked = os.environ.pop(REEXEC_MARK, None) is not None
    if loaded():
        _decided = True
        return True
    _decided = False
    lib = library_path()
    if marked:
        _warn("the library is still not loaded after re-executing with LD_PRELOAD=" + lib +
              ": the dynamic loader refused it (its message is above, if any) or ignored"
              " LD_PRELOAD (a static or setuid interpreter, secure-execution mode)")
        return False
    why = _not_rerunnable()
    if why:
        _warn(why)
        return False
    if not sys.executable:
        _warn("this interpreter does not know its own executable (sys.executable)")
        return False
    if not os.access(lib, os.R_OK):
        _warn("cannot read " + lib)
        return False
    if any(c in lib for c in " :"):
        _warn("LD_PRELOAD cannot hold a path with a space or a colon: " + lib)
        return False
    env = dict(os.environ)
    rest = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != lib]
    env["LD_PRELOAD"] = ":".join([lib] + rest)
    env[REEXEC_MARK] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, _argv(), env)
    except OSError as e:
        _warn("cannot execute " + sys.executable + ": " + e.strerror)
        return False
