"""Lays the Python integration out as site-packages, beside STAMP: the
package's files into site/epollfix/, the start-up hook beside it.

usage: make-site.py STAMP FILE...
"""
import os
import shutil
import sys

stamp, files = sys.argv[1], sys.argv[2:]
site = os.path.join(os.path.dirname(stamp), "site")
pkg = os.path.join(site, "epollfix")
os.makedirs(pkg, exist_ok=True)
for f in files:
    name = os.path.basename(f)
    top = name in ("_epollfix_startup.py", "epollfix.pth", "epollfix.start")
    shutil.copyfile(f, os.path.join(site if top else pkg, name))
with open(stamp, "w") as f:
    f.write(site + "\n")
