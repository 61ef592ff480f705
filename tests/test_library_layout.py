"""The library's shape: each package's public surface pinned, no import cycles, layers that only point down."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import mcp_server_guard

PACKAGE_DIR = Path(mcp_server_guard.__file__).parent

# The public surface of each package, pinned: a name added or dropped is a decision, made here too.
EXPORTED = {
    "mcp_server_guard": [
        "ERROR_CODES", "ERROR_META_KEY", "AuditLog", "AuditRecord", "Category", "ErrorPayload", "ExecutionError",
        "GuardError", "GuardedServer", "Jail", "Located", "NetworkRules", "ParamError", "Policy", "PolicyError",
        "Protection", "ResourceError",
        "SecurityError", "ServerConfig", "SymlinkMode", "HostError", "ToolInput", "ToolOutput", "load_policy",
        "lazy_exports", "note", "printable", "protection_for", "recorded_digest", "state_dir",
        "within", "within_any",
    ],
    "mcp_server_guard.serving": [
        "MAX_MESSAGE_BYTES", "ClientRoots", "GuardedServer", "HistoryDirOpt", "ServerConfig", "ToolInput",
        "ToolOutput", "build_config", "option", "resolve_history_dir", "run_app", "serve_stdio", "server_cli",
        "usage_error", "Mode", "command_target", "run_console", "state_hidden", "state_in_use", "Tools", "ToolSpec",
        "ResourceSpec", "STOP_SIGNALS",
    ],
    "mcp_server_guard.files": [
        "HistoryEntry", "HistoryError", "HistoryStore", "Jail", "Located", "Page", "Sniffed",
        "SymlinkMode", "TempJournal", "Writer", "journal_dir", "mime_of", "open_writer", "read_page", "sha256_fd",
        "sniff", "sweep_journals",
    ],
    "mcp_server_guard.shell": [
        "BASH", "REGISTRY", "Approval", "ApprovalForm", "SessionApprovals",
        "Checked", "EgressProxy", "NoQuestion", "PolicyEngine", "Prepared", "RunResult",
        "ShellExec",
        "TooComplex", "Verdict", "base_env", "build_env", "check_examples", "limit_hit", "limits_of", "parse",
        "question", "require_approval", "run",
    ],
    "mcp_server_guard.shell.strings": [
        "INTERPRETERS", "SHELLS", "PolicyEngine", "TooComplex", "Verdict", "analysis_budget", "check_examples", "parse",
        "substitutes",
    ],
    "mcp_server_guard.shell.sandbox": [
        "Confinement", "Deciding", "Limits", "NetworkMode", "ReadScope", "SandboxMode", "SandboxPlan",
        "SandboxUnavailable", "begin", "call_options", "close_box", "confine", "give_up_pids_cgroup",
        "landlock_abi", "open_box",
        "pids_cgroup_ahead", "plan", "release", "release_all", "sweep_stale_tmpdirs",
    ],
    "mcp_server_guard.changes": [
        "Applier", "Change", "ChangeSet", "CopyArea", "Held", "Judgement", "Settled", "Transactions", "UndoConflict",
        "has_copy", "judge", "now_ns", "possible_areas", "read_upper", "rechecks_for", "recover",
    ],
    "mcp_server_guard.tools": [
        "OUTPUT_DESCRIPTION", "OUTPUT_TEMPLATE",
        "ChangedPath", "Changes", "JobInfo", "NetworkDenial", "OmittedRange", "PendingChanges", "ShellCall",
        "ShellResult", "ShellService",
    ],
    "mcp_server_guard.admin": ["format_entry", "main", "run_demo"],
}  # fmt: skip

# Who may import whom: a package's modules import only the layers listed for it (and the standard library
# and third parties). The shared server scaffold knows nothing of files' writers or of the shell.
ALLOWED_LAYERS = {
    "top": {"top", "shell.strings"},  # (the string layer's entry point only: hook_words parses a hook's text)
    "serving": {"top", "serving", "files.jail"},
    "files": {"top", "files"},
    "changes": {"top", "files", "changes"},
    "shell": {"top", "shell", "files.jail", "changes"},
    "tools": {"top", "serving", "files", "changes", "shell", "tools"},
    "admin": {"top", "serving", "files", "changes", "shell", "admin"},
}


def modules() -> list[str]:
    found = ["mcp_server_guard"]
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="mcp_server_guard."):
        found.append(info.name)
    return sorted(found)


def source_of(module: str) -> Path:
    rel = Path(*module.split(".")[1:])
    package = PACKAGE_DIR / rel / "__init__.py"
    return package if package.exists() else (PACKAGE_DIR / rel).with_suffix(".py")


def imports_of(module: str, known: set[str]) -> set[str]:
    """Library modules ``module`` imports at run time (TYPE_CHECKING blocks left out), lazy imports included."""
    tree = ast.parse(source_of(module).read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return {m for m in found if m in known and m != module}


def graph() -> dict[str, set[str]]:
    known = set(modules())
    return {module: imports_of(module, known) for module in known}


def layer(module: str) -> str:
    parts = module.split(".")
    top = {
        "mcp_server_guard",
        "errors",
        "asking",
        "audit",
        "policy",
        "paths",
        "protected",
        "globs",
        "_lazy",
        "patterns",  # regular expressions compiled when first used (issue 44)
        "linux",
        "git_dirs",
        "git_config",
        "faults",
        "registry",
        "dirwatch",
        "hook_configs",
        "package_sources",  # where manifests fetch packages from (hook_configs' readers of sources)
        "package_locks",  # where lock files fetch packages from
        "hook_runs",
        "make_reads",  # what GNU make reads (hook_runs' makefiles)
        "make_expand",  # GNU make's expansion and command line (make_reads)
        "env_names",
        "python_startup",
        "policy_files",  # the packaged policies' parsed forms (issue 44)
        "rc_files",  # what the user's shell rc files source
        "hook_words",  # the words of a line a hook runs
        "direnv_files",  # what direnv evaluates besides .envrc
        "mise_config",  # what a mise config runs on entering the project
        "hook_interpreters",  # what an interpreter a hook runs finds by its own rules
        "shell_words",  # bash's own expansions of a word a hook text gives (parameter operators, printf -v, IFS)
        "git_search",  # protected.py's search for git dirs: protected (top) may import only top-level modules
    }
    if len(parts) <= 2 and parts[-1] in top:
        return "top"
    return parts[1]


@pytest.mark.parametrize("package", sorted(EXPORTED))
def test_each_package_exports_exactly_its_pinned_names_and_each_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(EXPORTED[package])
    # Import every module first: a submodule named like an export (sandbox/confine.py beside the function
    # `confine`) replaced the export with the module once anything imported it.
    for name in modules():
        importlib.import_module(name)
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None and not isinstance(value, types.ModuleType), f"{package}.{name} is {value!r}"


def test_the_library_has_no_import_cycle() -> None:
    try:
        order = list(TopologicalSorter(graph()).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")
    assert "mcp_server_guard.serving.server" in order


def test_only_the_linux_module_loads_libc() -> None:
    # One module owns the OS calls ctypes makes: one place to read for what the code asks of the kernel.
    loading = sorted(
        str(path.relative_to(PACKAGE_DIR))
        for path in PACKAGE_DIR.rglob("*.py")
        if "CDLL(" in path.read_text(encoding="utf-8")
    )
    assert loading == ["linux.py"]


def test_imports_only_point_down_the_layers() -> None:
    wrong = []
    for module, imported in graph().items():
        for target in imported:
            allowed = ALLOWED_LAYERS[layer(module)]
            if layer(target) not in allowed and ".".join(target.split(".")[1:3]) not in allowed:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


# The string layer (issue 46): a subpackage of shell/ with one entry point, and shell/ a dozen modules at its top.
SHELL_TOP_MODULES = 12


def test_the_string_layer_is_reached_only_through_its_entry_point() -> None:
    strings = "mcp_server_guard.shell.strings"
    inside = [m for m in graph() if m.startswith(f"{strings}.")]
    assert len(inside) >= 15
    reaching = {
        module: sorted(used for used in uses if used.startswith(f"{strings}."))
        for module, uses in graph().items()
        if not module.startswith(strings)
    }
    assert {m: u for m, u in reaching.items() if u} == {}
    shell_top = [m for m in modules() if m.count(".") == 2 and m.startswith("mcp_server_guard.shell.")]
    assert len(shell_top) <= SHELL_TOP_MODULES, shell_top


def test_the_shared_server_scaffold_reaches_nothing_shell_specific() -> None:
    edges = graph()
    seen, todo = set(), [m for m in edges if layer(m) == "serving"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += edges[module]
    assert not [m for m in seen if layer(m) in {"shell", "admin"}], sorted(seen)


def test_importing_the_sandbox_package_imports_neither_the_sdk_nor_pydantic() -> None:
    # The in-box supervisor imports shell.sandbox with no site-packages at all.
    import subprocess
    import sys

    code = (
        "import sys, mcp_server_guard.shell.sandbox.planning;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'pydantic', 'anyio')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_mcp_guard_cli_and_the_error_tree_start_without_the_mcp_sdk() -> None:
    # `mcp-guard history`, `undo`, `audit`, `check`, `config` need none of it: importing the SDK cost each run
    # ~1.2 s of CPU (a user's every look at the history, and the suite's many CLI runs).
    import subprocess
    import sys

    code = (
        "import sys, mcp_server_guard.admin.app, mcp_server_guard.errors, mcp_server_guard.serving.launch;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# Two floor servers wrap the real server from inside and have to reach past the public surface: they replace
# module attributes that ShellExec.execute looks up at call time (`confine`; `run` and `run_boxed`). Nothing
# else in bench/ may.
BENCH_EXCEPTIONS = {
    ("servers/unconfined_server.py", "mcp_server_guard.shell.execution"),
    ("servers/memtrace_server.py", "mcp_server_guard.shell.execution"),
}


def library_uses(path: Path) -> list[str]:
    """Every use in ``path`` of a library name outside the pinned public surface (EXPORTED)."""
    tree = ast.parse(path.read_text(), str(path))
    bound: dict[str, str] = {}  # local name -> the library package it stands for
    imported: set[str] = set()  # every local name bound to something of the library
    wrong: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcp_server_guard"):
            module = node.module or ""
            for alias in node.names:
                imported.add(alias.asname or alias.name)
                if f"{module}.{alias.name}" in EXPORTED:
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif module not in EXPORTED or alias.name not in EXPORTED[module]:
                    wrong.append(f"line {node.lineno}: {module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mcp_server_guard"):
                    imported.add(alias.asname or alias.name.split(".")[0])
                    if alias.name not in EXPORTED:
                        wrong.append(f"line {node.lineno}: import {alias.name}")
                    elif alias.asname:
                        bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            package = bound[node.value.id]
            if node.attr not in EXPORTED[package] and f"{package}.{node.attr}" not in EXPORTED:
                wrong.append(f"line {node.lineno}: {package}.{node.attr}")
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in imported:
            wrong.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return wrong


def test_the_servers_use_only_public_names_of_the_library() -> None:
    # A server reaching into a module's insides (93 deep names once) breaks, or keeps a name alive, when the
    # library reshapes: the servers hold to the pinned surface like any other user.
    servers = PACKAGE_DIR.parents[2] / "servers"
    wrong = [
        f"{path.relative_to(servers)} {use}"
        for path in sorted(servers.glob("*/src/**/*.py"))
        for use in library_uses(path)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_bench_uses_only_public_names_of_the_library() -> None:
    # The bench once imported private functions of the sandbox and broke silently when they were renamed.
    bench = PACKAGE_DIR.parents[2] / "bench"
    wrong = []
    for path in sorted(bench.rglob("*.py")):
        relative = str(path.relative_to(bench))
        for use in library_uses(path):
            if not any(relative == f and m in use for f, m in BENCH_EXCEPTIONS):
                wrong.append(f"bench/{relative} {use}")
    assert not wrong, "\n".join(wrong)


# Thin servers, short functions: a server module holds its contract's models and wiring; what a tool does lives in
# the library, in functions a reader can hold in view.
SERVER_MODULE_LINES = 350
FUNCTION_LINES = 100


def _python_files() -> list[Path]:
    root = PACKAGE_DIR.parents[2]
    servers = [p for p in (root / "servers").rglob("*.py") if "tests" not in p.parts]
    return sorted(PACKAGE_DIR.rglob("*.py")) + sorted(servers)


def test_each_servers_module_is_contract_and_wiring_only() -> None:
    root = PACKAGE_DIR.parents[2]
    long = {
        str(p.relative_to(root)): n
        for p in sorted((root / "servers").glob("*/src/*/server.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > SERVER_MODULE_LINES
    }
    assert len(list((root / "servers").glob("*/src/*/server.py"))) == 3
    assert not long, long


# No library module over 600 lines (split one along its concerns before it grows past that: issue 46).
MODULE_LINES = 600


def test_no_library_module_is_over_600_lines() -> None:
    sizes = {
        str(path.relative_to(PACKAGE_DIR)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
    }
    over = {name: n for name, n in sizes.items() if n > MODULE_LINES}
    assert not over, over


def test_no_function_is_longer_than_a_screenful_or_two() -> None:
    long = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.end_lineno is None:
                continue
            if (n := node.end_lineno - node.lineno + 1) > FUNCTION_LINES:
                long.append(f"{path.name}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "\n".join(long)
