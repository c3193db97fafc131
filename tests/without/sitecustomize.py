"""Imported at start-up when this folder is on PYTHONPATH: the top-level modules named in CHRF_WITHOUT (comma
separated) are not found, as if they were not installed (`importlib.util.find_spec` gives None, `import` raises
ModuleNotFoundError). Shows what runs in a smaller environment (the unit tests without the service's dependencies,
the research commands without the aws extra) in this one."""

import os
import sys

MISSING = frozenset(name for name in os.environ.get("CHRF_WITHOUT", "").split(",") if name)


class Without:
    """A finder of sys.meta_path that finds nothing of MISSING and otherwise is the finder it wraps."""

    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in MISSING:
            return None
        find_spec = getattr(self.finder, "find_spec", None)
        return find_spec(name, path, target) if find_spec is not None else None

    def __getattr__(self, attribute):
        return getattr(self.finder, attribute)


if MISSING:
    sys.meta_path[:] = [Without(finder) for finder in sys.meta_path]
