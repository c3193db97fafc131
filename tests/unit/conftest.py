"""The library's tests' one fixture shared by many modules: ``kernel``, each counting kernel this process can run
(test_kernels.kernels), made the library's for the test."""

import pytest
from chrf_core import kernel as kernel_module
from test_kernels import kernels


@pytest.fixture(params=kernels())
def kernel(request, monkeypatch):
    """The test runs once per kernel (native and Python once the native one is built), with it in use."""
    monkeypatch.setattr(kernel_module, "KERNEL", request.param)
    return request.param
