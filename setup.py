"""The native kernel as a setuptools extension, and a reproducible sdist (everything else about the package is in
pyproject.toml).

`make setup` builds the kernel in place (layers/chrf_core/chrf_core/_kernel.abi3.so) for the host, against the
CPython Limited API, so one object serves Python 3.11 and later. It is optional unless CHRF_REQUIRE_NATIVE=1: without
a C compiler the package still installs and counts in Python. `make dist` cross-compiles it into the wheels with Zig;
the Lambda layer's arm64 object is built separately, by layers/chrf_core/Makefile during `sam build`.
"""

import glob
import gzip
import importlib.util
import io
import os
import tarfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

NATIVE = "layers/chrf_core/native"


def compile_flags() -> tuple[list[str], tuple[str, str]]:
    """The kernel's compile flags from their one list (native/cflags), its Limited API macro apart."""
    with open(f"{NATIVE}/cflags", encoding="utf-8") as listed:
        flags = [line.strip() for line in listed if line.strip() and not line.startswith("#")]
    (limited,) = [flag for flag in flags if flag.startswith("-DPy_LIMITED_API=")]
    return [flag for flag in flags if flag != limited], ("Py_LIMITED_API", limited.partition("=")[2])


COMPILE_FLAGS, LIMITED_API = compile_flags()


class BuildExtension(build_ext):
    """Compiles against headers every compiler can use: on Debian and Ubuntu, Python's pyconfig.h only wraps the
    real one in a multiarch folder that cross compilers (Zig) do not search, so the headers are staged with the real
    one in its place (native/python_include.py)."""

    def build_extensions(self) -> None:
        spec = importlib.util.spec_from_file_location("python_include", f"{NATIVE}/python_include.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        include = module.usable_include(os.path.join(self.build_temp, "python-include"))
        for extension in self.extensions:
            extension.include_dirs.insert(0, include)
        super().build_extensions()


# The service itself, for `serve`, `invoke` and `pipeline run --local` from a wheel in any folder: its template,
# functions and state machine, copied into the emulator's package (chrf_components_local/project/) when it is built.
PROJECT_FILES = ("template.yaml", "functions/chrf_components/*.py", "statemachine/*.asl.json")


class BuildPy(build_py):
    """The packages, and the service's own files (PROJECT_FILES) beside the emulator that runs them."""

    def run(self) -> None:
        super().run()
        for pattern in PROJECT_FILES:
            for source in sorted(glob.glob(pattern)):
                target = os.path.join(self.build_lib, "chrf_components_local", "project", source)
                self.mkpath(os.path.dirname(target))
                self.copy_file(source, target)


class ReproducibleSdist(sdist):
    """An sdist whose bytes depend on the sources alone: members sorted, owned by root, dated SOURCE_DATE_EPOCH
    (else 1980-01-01), gzip header without a name or time."""

    def make_distribution(self) -> None:
        super().make_distribution()
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
        for archive in self.archive_files:
            if archive.endswith(".tar.gz"):
                rewrite(archive, epoch)


def rewrite(archive: str, epoch: int) -> None:
    with tarfile.open(archive) as source:
        members = sorted(((member, source.extractfile(member)) for member in source.getmembers()),
                         key=lambda pair: pair[0].name)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as target:
            for member, data in members:
                member.mtime, member.uid, member.gid, member.uname, member.gname = epoch, 0, 0, "root", "root"
                member.mode = 0o755 if member.isdir() else 0o644
                member.pax_headers = {}
                target.addfile(member, data)
    with open(archive, "wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=epoch) as compressed:
        compressed.write(buffer.getvalue())


setup(
    ext_modules=[
        Extension(
            "chrf_core._kernel",
            sources=sorted(glob.glob(f"{NATIVE}/*.c")),
            depends=sorted(glob.glob(f"{NATIVE}/*.h")),
            define_macros=[LIMITED_API],
            py_limited_api=True,
            extra_compile_args=[*COMPILE_FLAGS, "-O2", *(["-Werror"] if os.environ.get("CHRF_WERROR") == "1" else [])],
            extra_link_args=["-pthread"],
            optional=os.environ.get("CHRF_REQUIRE_NATIVE") != "1",
        )
    ],
    cmdclass={"build_ext": BuildExtension, "build_py": BuildPy, "sdist": ReproducibleSdist},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
