"""The layer's shape: ``chrf_core`` is a stack without an import cycle (module-level and function-level imports
alike), and the command line, the functions and the local emulator reach it through its one door: the package's
own names (``CHRF``, ``Counts``, ...), ``chrf_core.service`` for a request's rules, ``chrf_core.contract`` for
its names and ``chrf_core.arrays`` for the scores of count arrays, never another submodule."""

import ast
import re
import subprocess

import pytest
from support import ROOT

PACKAGE = ROOT / "layers" / "chrf_core" / "chrf_core"
CALLERS = [ROOT / "cli", ROOT / "functions", ROOT / "local"]
DOOR = {"chrf_core", "chrf_core.service", "chrf_core.contract", "chrf_core.arrays"}
REACH_IN = re.compile(r"chrf_core\.[a-z_]*\.")


def internal_imports(path, package="chrf_core"):
    """The chrf_core modules a module of the package (or of its subpackage ``package``) imports, anywhere in it
    (inside functions too)."""
    module = package if path.stem == "__init__" else f"{package}.{path.stem}"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
            if node.module:
                found.add(f"{base}.{node.module}")
            else:  # from . import a, b
                found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chrf_core"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("chrf_core"))
    return module, {name for name in found if name != module}


def import_graph():
    graph = dict(internal_imports(path) for path in sorted(PACKAGE.glob("*.py")))
    graph.update(internal_imports(path, "chrf_core.engines") for path in sorted((PACKAGE / "engines").glob("*.py")))
    native = {"chrf_core._kernel"}  # the C extension imports nothing of the package
    return {module: imports - native for module, imports in graph.items()}


def cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(module, path):
        state[module] = "open"
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return [*path[path.index(imported):], imported] if imported in path else [*path, imported]
            if imported not in state:
                found = visit(imported, [*path, imported])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle_closed_inside_a_function():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_import_walk_sees_function_level_imports(tmp_path):
    module = tmp_path / "report.py"
    module.write_text("from .counts import Counts\n\ndef f():\n    from .metric import CHRF\n    from . import mbr\n")
    assert internal_imports(module) == ("chrf_core.report", {"chrf_core.counts", "chrf_core.metric",
                                                            "chrf_core.mbr"})


def test_chrf_core_has_no_import_cycle():
    graph = import_graph()
    assert {"chrf_core.kernel", "chrf_core.counts", "chrf_core.formula", "chrf_core.metric"} <= set(graph)
    assert cycle(graph) is None, " -> ".join(cycle(graph))


LAYER_ORDER = ["contract", "errors", "settings", "stored", "texts", "preparation", "tokens", "python_kernel", "kernel",
               "counts", "formula", "report", "arrays", "mbr", "streams", "metric", "service"]
ENGINES_ORDER = ["engines", "engines.statistics", "engines.relay", "engines.arrow", "engines.ray", "engines.spark",
                 "engines.dask", "engines.torchmetrics", "engines.mbrs"]


def test_the_stack_runs_from_the_contract_up_to_the_service_then_the_engines_in_this_order():
    order = LAYER_ORDER + ENGINES_ORDER
    graph = import_graph()
    assert set(graph) == {f"chrf_core.{name}" for name in order} | {"chrf_core"}
    for module in order:
        below = {f"chrf_core.{name}" for name in order[:order.index(module)]}
        above = graph[f"chrf_core.{module}"] - below
        assert not above, f"chrf_core.{module} imports {sorted(above)}, which are not below it"


def test_the_layer_imports_nothing_of_the_engines_but_the_mbrs_backend_when_mbrs_is_loaded():
    """The engines' wing is not in the Lambda layer (sam build copies chrf_core/*.py): no module of the layer needs
    it; the package's __init__ registers the mbrs metric only when mbrs itself is already loaded."""
    graph = import_graph()
    engines = {f"chrf_core.{name}" for name in ENGINES_ORDER}
    for module in ["chrf_core", *(f"chrf_core.{name}" for name in LAYER_ORDER)]:
        reached = graph[module] & engines
        assert reached <= ({"chrf_core.engines", "chrf_core.engines.mbrs"} if module == "chrf_core" else set()), \
            (module, reached)
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert 'if "mbrs" in sys.modules:' in source and "from .engines import mbrs" in source


def caller_files():
    return sorted(path for folder in CALLERS for path in folder.rglob("*.py") if "__pycache__" not in path.parts)


def test_callers_import_chrf_core_through_its_door_only():
    seen = 0
    for path in caller_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chrf_core"):
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names if alias.name.startswith("chrf_core")]
            else:
                continue
            seen += 1
            assert set(names) <= DOOR, f"{path.relative_to(ROOT)}:{node.lineno} imports {names}"
    assert seen >= 10  # the scan reads the callers


def test_callers_reach_no_submodule_attribute_beyond_the_door():
    # the issue's own check: grep -rn "chrf_core\.[a-z_]*\." cli functions local
    found = subprocess.run(["grep", "-rnE", "--include=*.py", r"chrf_core\.[a-z_]*\.", *map(str, CALLERS)],
                           capture_output=True, text=True).stdout.splitlines()
    assert found, "the grep reads the callers (they name chrf_core.service. and chrf_core.contract.)"
    beyond = [line for line in found if beyond_the_door(line.split(":", 2)[2])]
    assert not beyond, "\n".join(beyond)


def beyond_the_door(text):
    return [match.group(0) for match in REACH_IN.finditer(text)
            if match.group(0)[:-1] not in DOOR]


@pytest.mark.parametrize(("text", "reaches_in"), [("chrf_core.counting.Counts.from_dict(x)", True),
                                                  ("chrf_core.report.build_report(x)", True),
                                                  ("chrf_core.service.parse_request(x)", False),
                                                  ("chrf_core.contract.TOOL", False),
                                                  ("chrf_core.arrays.score_texts(x)", False),
                                                  ("chrf_core.Counts.from_dict(x)", False)])
def test_the_reach_in_check_tells_submodules_from_the_door(text, reaches_in):
    assert bool(beyond_the_door(text)) == reaches_in


def test_chrf_is_a_facade_of_at_most_15_methods_and_the_package_exports_at_most_15_names():
    import inspect

    import chrf_core

    methods = sorted(name for name in dir(chrf_core.CHRF) if not name.startswith("_") and not isinstance(
        inspect.getattr_static(chrf_core.CHRF, name), property) and callable(getattr(chrf_core.CHRF, name)))
    assert "corpus_score" in methods and "get_signature" in methods  # the scan sees inherited methods too
    assert len(methods) <= 15, methods
    assert len(chrf_core.__all__) <= 15, chrf_core.__all__
    assert all(hasattr(chrf_core, name) for name in chrf_core.__all__)


def test_the_layers_own_python_is_the_contracts_scorer_within_its_size_and_imports_no_engine():
    """What sam build ships (chrf_core/*.py, tests/template/test_sam_build.py checks the built layer too): at most
    2,800 lines of Python and no import of an engine (the engines' wing, chrf_core/engines, is not shipped)."""
    shipped = sorted(PACKAGE.glob("*.py"))
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in shipped)
    assert lines <= 2800, lines
    engine = re.compile(r"^\s*(?:import|from)\s+(?:torch|torchmetrics|ray|pyspark|dask|pyarrow|pandas|mbrs)\b",
                        re.MULTILINE)
    assert [path.name for path in shipped if engine.search(path.read_text(encoding="utf-8"))] == []
