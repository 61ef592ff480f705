"""The crash walk of tests/changes/test_crash_walk.py as a module of its own, for test files that walk other shapes
or other set-ups with it (the test directories are no packages: ``--import-mode=importlib``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["crash_walk"]


def crash_walk(name: str) -> ModuleType:
    """tests/changes/test_crash_walk.py loaded afresh as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "changes" / "test_crash_walk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
