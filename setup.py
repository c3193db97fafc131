"""The native kernel as a setuptools extension (everything else about the package is in pyproject.toml).

`make setup` builds it in place (layers/chrf_core/chrf_core/_kernel.abi3.so) for the host, against the CPython
Limited API, so one object serves Python 3.11 and later. It is optional unless CHRF_REQUIRE_NATIVE=1: without a C
compiler the package still works, counting in Python. The Lambda layer's arm64 object is built separately, by
layers/chrf_core/Makefile during `sam build`.
"""

import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "chrf_core._kernel",
            sources=["layers/chrf_core/native/kernel.c"],
            define_macros=[("Py_LIMITED_API", "0x030B0000")],
            py_limited_api=True,
            extra_compile_args=["-std=c99", "-O2", "-ffp-contract=off", "-Wall", "-Wextra"],
            optional=os.environ.get("CHRF_REQUIRE_NATIVE") != "1",
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
