"""chrf_core.engines.mbrs, the mbrs metric backend, where mbrs is not installed (tests/integration/test_mbrs_backend.py
runs it with mbrs): it imports and registers nothing, and chrf_core never imports mbrs or PyTorch by itself."""

import subprocess
import sys

from support import ROOT

LAYER = str(ROOT / "layers" / "chrf_core")


def run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": LAYER, "PATH": "/usr/bin:/bin"})


def test_the_backend_module_imports_without_mbrs_and_registers_nothing():
    result = run("import importlib.util, sys\n"
                 "assert importlib.util.find_spec('mbrs') is None\n"
                 "import chrf_core.engines.mbrs\n"
                 "backend = chrf_core.engines.mbrs\n"
                 "assert backend.AVAILABLE is False and not hasattr(backend, 'MetricChrfCore')\n"
                 "assert 'torch' not in sys.modules and 'mbrs' not in sys.modules\n")
    assert result.returncode == 0, result.stderr


def test_importing_chrf_core_loads_neither_mbrs_nor_the_backend():
    result = run("import sys, chrf_core\n"
                 "assert not {'mbrs', 'torch', 'chrf_core.engines.mbrs'} & set(sys.modules), sorted(sys.modules)\n")
    assert result.returncode == 0, result.stderr


def test_a_module_called_mbrs_that_is_not_mbrs_leaves_chrf_core_working():
    result = run("import sys, types\n"
                 "sys.modules['mbrs'] = types.ModuleType('mbrs')  # made up: no spec, no metrics\n"
                 "import chrf_core\n"
                 "assert chrf_core.engines.mbrs.AVAILABLE is False\n"
                 "print(chrf_core.CHRF().sentence_score('a cat', 'a cat').score)\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "100.0"


def test_reference_lprobs_that_are_not_log_probabilities_are_named_as_mbrs_passes_them():
    """The backend weighs references by the softmax of mbrs' reference_lprobs: -inf is a reference of no weight,
    NaN or +inf is no log-probability (its softmax would be NaN, reported as weights[0] before)."""
    import math

    import pytest
    from chrf_core import InvalidInputError
    from chrf_core.engines.mbrs import check_lprobs

    check_lprobs([-math.inf, 0.0, -3.5])
    for lprobs, message in (([0.0, math.inf], r"reference_lprobs\[1\]: must be a log-probability"),
                            ([math.nan, 0.0], r"reference_lprobs\[0\]: must be a log-probability"),
                            ([-math.inf, -math.inf], "reference_lprobs: must not all be -inf")):
        with pytest.raises(InvalidInputError, match=message):
            check_lprobs(lprobs)
