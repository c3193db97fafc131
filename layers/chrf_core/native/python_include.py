"""The CPython headers to compile the native kernel against, usable by any C compiler, cross compilers included.

Debian and Ubuntu ship Python's pyconfig.h as a wrapper that includes the real one from a multiarch folder
(``/usr/include/x86_64-linux-gnu/python3.11/pyconfig.h``), which only the system's own compiler searches: Zig,
which cross-compiles the wheels and the Lambda layer, stops with "file not found". For such a Python the headers
are staged in a folder of the build's with the real pyconfig.h in place of the wrapper (Python.h includes it with
quotes, so it must sit beside Python.h); any other Python's own include folder is used as it is. The kernel uses
the Limited API only, whose declarations are the same for every 64-bit Linux target.

    python python_include.py STAGING_DIR     prints the folder to pass as -I
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig


def real_pyconfig(include: str) -> str | None:
    """The multiarch pyconfig.h that ``include``'s pyconfig.h wraps, or None if it is no such wrapper."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    wrapper = os.path.join(include, "pyconfig.h")
    if not multiarch or not os.path.isfile(wrapper):
        return None
    with open(wrapper, encoding="utf-8", errors="replace") as file:
        if f"<{multiarch}/" not in file.read():
            return None
    real = os.path.join(os.path.dirname(include), multiarch, os.path.basename(include), "pyconfig.h")
    return real if os.path.isfile(real) else None


def usable_include(staging: str, include: str | None = None) -> str:
    """``include`` (default: this Python's) if any compiler can use it, else a staged copy in ``staging``."""
    include = include or sysconfig.get_paths()["include"]
    real = real_pyconfig(include)
    if real is None:
        return include
    target = os.path.join(os.path.abspath(staging), os.path.basename(include))
    shutil.copytree(include, target, dirs_exist_ok=True)
    shutil.copyfile(real, os.path.join(target, "pyconfig.h"))
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python python_include.py STAGING_DIR")
    print(usable_include(sys.argv[1]))
