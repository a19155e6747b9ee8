"""Turns on epollfix's exact timeouts at interpreter start (epollfix.pth, and
epollfix.start from Python 3.15), only when libepollfix is in the process.
Without it this costs two environment look-ups and, where /etc/ld.so.preload
exists, reading it: the extension is not even imported."""
import os


def _preloaded():
    if "epollfix" in os.environ.get("LD_PRELOAD", ""):
        return True
    try:
        with open("/etc/ld.so.preload", "rb") as f:
            return b"epollfix" in f.read(65536)
    except OSError:
        return False


def activate():
    if os.environ.get("EPOLLFIX_PYTHON", "on").strip().lower() == "off":
        return
    if not _preloaded():
        return
    try:
        from epollfix import _epollfix
    except ImportError:
        return
    _epollfix.activate()
