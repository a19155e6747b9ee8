"""`epollfix ...` and `python -m epollfix ...`: the wheel's C command, run with
the same arguments, so every option (and --check, --help, the exit status) is
exactly the C command's."""
import os
import sys

from . import command_path


def main():
    cmd = command_path()
    try:
        os.execv(cmd, ["epollfix"] + sys.argv[1:])
    except OSError as e:
        sys.exit("epollfix: cannot run " + cmd + ": " + e.strerror)


if __name__ == "__main__":
    main()
