"""The two things pyproject.toml cannot say: the wheel holds native code (a
platform wheel, installed into platlib), and that code does not link with
libpython, so any Python 3 can use it (py3-none-<platform>). scripts/package-wheel
then has auditwheel give it the manylinux tag of the glibc it needs."""
import os
import sys

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
for f in ("epollfix/_native/libepollfix.so", "epollfix/_native/epollfix", "epollfix/_version.py"):
    if not os.path.exists(os.path.join(HERE, f)):
        sys.exit("setup.py: " + f + " is missing: build the wheel with scripts/package-wheel")


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
