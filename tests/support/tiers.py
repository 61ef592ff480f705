"""Each test's tier (``unit``, ``memory``, ``stdio``, ``box``), from the code the test itself runs.

A test's tier is the strongest sign found in its own source (decorators, and the whole class for a test method),
in the module-level names that source uses (functions, classes, constants, ``pytestmark``), in the test helpers
those names come from (``support.*`` and other test modules), followed name by name, and in every fixture the
test uses (its source, followed the same way). Library code (``mcp_server_*``, the SDK, the standard library) is
not followed: what it does is told by the test's text, as the module rule did. When a test's code cannot be read,
its tier is its module's, from the module's whole text (the rule before tiers were per test); so is every test of a
module whose text uses the box (whether a command runs in the box is the library's and the servers' choice).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

TIERS = ("unit", "memory", "stdio", "box")
_RANK = {tier: rank for rank, tier in enumerate(TIERS)}
_TESTS = Path(__file__).resolve().parent.parent

# What a text uses, strongest first.
SIGNS = (
    ("box", ("support.boxed", "support.differential", "support.copies", "bwrap", "support.fidelity",
             "support.hooked", "support.redteam")),
    ("stdio", ("support.serve", "from support import serve", "support.clients", "stdio_client", "support.processes",
               "import serve", "serve(", "mcp-guard", "mcp-server-", "console_script", "RawClient",
               "refused_start", "server_params", "StdioServerParameters", '/ "clients"')),
    ("memory", ("support.memory", "from support import memory", "in_memory(")),
)  # fmt: skip
# Helpers whose every name carries a tier, whatever the name's own text says.
HELPER_TIERS = {
    "support.boxed": "box",
    "support.copies": "box",
    "support.differential": "box",
    "support.fidelity": "box",
    "support.hooked": "box",
    "support.redteam": "box",
    "support.processes": "stdio",
    "support.memory": "memory",
}
_WORD = re.compile(r"[A-Za-z_]\w*")


def strongest(*tiers: str) -> str:
    return max(tiers, key=_RANK.__getitem__, default="unit")


def tier_of_text(text: str) -> str:
    text = text.replace('"mcp-guard/error"', "")  # the key of a refusal's payload, not the CLI
    return next((tier for tier, signs in SIGNS if any(s in text for s in signs)), "unit")


@functools.cache
def _is_test_code(path: str | None) -> bool:
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to(_TESTS)
    except OSError:
        return False


@dataclass
class _Module:
    module: ModuleType
    text: str
    names: dict[str, list[str]] = field(default_factory=dict)  # top-level name -> the texts that define it

    @classmethod
    def read(cls, module: ModuleType) -> _Module:
        text = Path(module.__file__ or "").read_text(encoding="utf-8")
        found = cls(module, text)
        lines = text.splitlines()
        found._collect(ast.parse(text).body, lines)
        return found

    def _collect(self, body: list[ast.stmt], lines: list[str]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                self._add(node.name, "\n".join(lines[first - 1 : node.end_lineno]))
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                source = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            self._add(name.id, source)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self._add(alias.asname or alias.name, f"from {node.module} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self._add(alias.asname or alias.name.split(".")[0], f"import {alias.name}")
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
                inner += [s for h in getattr(node, "handlers", []) for s in h.body]
                self._collect(inner, lines)
            else:  # code run at import (a call, a loop): every name it binds is taken as the whole statement
                source = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                for name in ast.walk(node):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        self._add(name.id, source)

    def _add(self, name: str, source: str) -> None:
        self.names.setdefault(name, []).append(source)


class Tiers:
    """The tier of each test, with what has been read kept between tests."""

    def __init__(self) -> None:
        self._modules: dict[str, _Module] = {}
        self._items: dict[object, str] = {}  # a test function or class -> the tier of its own code
        self._fixtures: dict[object, str] = {}  # a fixture function -> its tier
        self._whole: dict[str, str] = {}

    def of_module(self, module: Any) -> str:
        """The module rule: the strongest sign anywhere in the module's text."""
        name = getattr(module, "__name__", "")
        if name not in self._whole:
            try:
                text = Path(getattr(module, "__file__", None) or "").read_text(encoding="utf-8")
            except OSError:
                text = ""
            self._whole[name] = HELPER_TIERS.get(name) or tier_of_text(text)
        return self._whole[name]

    def of_item(self, item: Any) -> str:
        module = getattr(item, "module", None)
        fallback = self.of_module(module) if module is not None else "box"
        if fallback == "box":
            # Whether a command runs in the box is the servers' and the library's choice (shell_exec sandboxes by
            # default), which a test's text does not show: a module that uses the box keeps every test there.
            return fallback
        try:
            return self._of_item(item, module)
        except Exception:  # code that cannot be read: the module's tier, as before
            return fallback

    def _of_item(self, item: Any, module: ModuleType | None) -> str:
        function = getattr(item, "function", None)
        if module is None or function is None:
            raise LookupError(item)
        cls = getattr(item, "cls", None)
        key = cls if cls is not None else function  # the same for every case of a parametrized test
        if key not in self._items:
            found = self._module(module)
            own = inspect.getsource(key)
            seen: set[tuple[str, str]] = set()
            self._items[key] = strongest(
                tier_of_text(own), self._words(own, found, seen), self._name("pytestmark", found, seen)
            )
        tier = self._items[key]
        definitions = item._fixtureinfo.name2fixturedefs
        for fixture in item.fixturenames:
            for definition in (definitions.get(fixture) or ())[-1:]:
                func = definition.func
                if func not in self._fixtures:
                    self._fixtures[func] = self._fixture(func)
                tier = strongest(tier, self._fixtures[func])
        return tier

    def _fixture(self, func: Any) -> str:
        func = inspect.unwrap(func)
        path = inspect.getsourcefile(func)
        if not _is_test_code(path):
            return "unit"  # pytest's and plugins' fixtures (tmp_path, monkeypatch, anyio_backend)
        module = inspect.getmodule(func)
        if module is None or not module.__file__:
            raise LookupError(func)
        found = self._module(module)
        source = inspect.getsource(func)
        return strongest(
            HELPER_TIERS.get(module.__name__, "unit"), tier_of_text(source), self._words(source, found, set())
        )

    def _module(self, module: ModuleType) -> _Module:
        key = module.__file__ or module.__name__
        if key not in self._modules:
            self._modules[key] = _Module.read(module)
        return self._modules[key]

    def _words(self, source: str, found: _Module, seen: set[tuple[str, str]]) -> str:
        tier = "unit"
        for word in set(_WORD.findall(source)):
            if word in found.names:
                tier = strongest(tier, self._name(word, found, seen))
        return tier

    def _name(self, name: str, found: _Module, seen: set[tuple[str, str]]) -> str:
        # Not kept between tests: a name met again in a cycle adds nothing here, yet its tier is still whole
        # only for the walk that first met it.
        key = (found.module.__file__ or found.module.__name__, name)
        if key in seen or name not in found.names:
            return "unit"
        seen.add(key)
        tier = "unit"
        for source in found.names[name]:
            tier = strongest(tier, tier_of_text(source))
            if not source.startswith(("from ", "import ")):
                tier = strongest(tier, self._words(source, found, seen))
        value = found.module.__dict__.get(name)
        if isinstance(value, ModuleType):
            if _is_test_code(getattr(value, "__file__", None)):
                tier = strongest(tier, self.of_module(value))
        elif value is not None and any(s.startswith(("from ", "import ")) for s in found.names[name]):
            tier = strongest(tier, self._imported(value, seen))
        return tier

    def _imported(self, value: Any, seen: set[tuple[str, str]]) -> str:
        home = sys.modules.get(getattr(value, "__module__", None) or "")
        if home is None or not _is_test_code(getattr(home, "__file__", None)):
            return "unit"  # the library, the SDK, the standard library: told by the test's own text
        if home.__name__ in HELPER_TIERS:
            return HELPER_TIERS[home.__name__]
        own = getattr(value, "__name__", None)
        found = self._module(home)
        if not isinstance(own, str) or own not in found.names:
            return self.of_module(home)  # a value made elsewhere: the whole helper module's tier
        return self._name(own, found, seen)
