"""Code compiled from text at every start, compiled once and read back sealed (``serving.code_cache``, issue 44).

``dataclasses`` builds each class's methods from text with ``exec``, ``typing.ForwardRef`` compiles every string
annotation pydantic resolves: with the cache, what runs is the code the builtins would have compiled from the same
text, and the next start reads it from a file only a server of the user, with the user's key, can have written.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import marshal
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard import registry
from mcp_server_guard.serving import code_cache
from mcp_server_guard.serving.front_records import _seal, sealed_as
from support import RawClient, console_script
from support.compiled import install_for_test


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cache installed for this test only: empty, usable, and taken off ``dataclasses`` and ``typing`` after."""
    install_for_test(monkeypatch)
    yield


def _shapes() -> list[Callable[[], type]]:
    """Dataclasses of every kind of generated method: frozen (setattr, delattr, hash), ordered, slots, keyword-only,
    defaults and factories, InitVar and a field out of __init__ (a __post_init__)."""

    def plain() -> type:
        @dataclasses.dataclass
        class Plain:
            a: int
            b: str = "x"
            c: list[int] = dataclasses.field(default_factory=list)

        return Plain

    def frozen() -> type:
        @dataclasses.dataclass(frozen=True, order=True)
        class Frozen:
            a: int
            b: tuple[str, ...] = ()

        return Frozen

    def slotted() -> type:
        @dataclasses.dataclass(slots=True, kw_only=True)
        class Slotted:
            a: int
            b: float = 1.5

        return Slotted

    def post_init() -> type:
        @dataclasses.dataclass
        class PostInit:
            a: int
            scale: dataclasses.InitVar[int] = 2
            b: int = dataclasses.field(init=False, default=0)

            def __post_init__(self, scale: int) -> None:
                self.b = self.a * scale

        return PostInit

    return [plain, frozen, slotted, post_init]


def _behaviour(cls: type) -> list[Any]:
    """What a user of the class can see of its generated methods."""
    init = cls.__init__  # type: ignore[misc]
    seen: list[Any] = [str(inspect.signature(init)), init.__annotations__, init.__code__.co_filename]
    seen.append(init.__code__.co_flags)
    one, two = (cls(a=1), cls(a=1)) if cls.__name__ == "Slotted" else (cls(1), cls(1))
    seen += [repr(one), one == two, cls.__hash__ is None or hash(one) == hash(two)]
    if cls.__name__ == "Frozen":
        with pytest.raises(dataclasses.FrozenInstanceError):
            one.a = 2
        seen.append(cls(1) < cls(2))
    if cls.__name__ == "PostInit":
        seen.append(one.b)
    return seen


@pytest.mark.parametrize("make", _shapes(), ids=lambda make: make.__name__)
def test_a_dataclass_made_from_cached_code_behaves_as_one_made_natively(
    make: Callable[[], type], monkeypatch: pytest.MonkeyPatch
) -> None:
    native = _behaviour(make())
    monkeypatch.setattr(code_cache, "_codes", {})
    monkeypatch.setattr(dataclasses, "exec", code_cache._exec, raising=False)
    compiled = _behaviour(make())  # (compiled by the cache)
    assert code_cache._codes
    reused = _behaviour(make())  # (its code taken from the cache)
    assert native == compiled == reused


def test_generated_methods_get_no_future_flag_of_the_cache(cache: None) -> None:
    """``__init__``'s annotations are the fields' types, as natively: not the names the text gives them (which a
    ``from __future__ import annotations`` of the cache's own module, passed on, would have made them)."""
    made = dataclasses.make_dataclass("Made", [("a", int), ("b", list, dataclasses.field(default_factory=list))])
    assert code_cache._codes
    assert made.__init__.__annotations__ == {"a": int, "b": list, "return": None}  # type: ignore[misc]


def test_a_string_annotation_evaluates_the_same_from_cached_code(cache: None) -> None:
    ref = typing.ForwardRef("dict[str, list[int]] | None")
    again = typing.ForwardRef("dict[str, list[int]] | None")
    assert ref.__forward_code__ is again.__forward_code__  # compiled once
    assert typing.get_type_hints(_Annotated) == {"x": dict[str, list[int]] | None}


class _Annotated:
    x: dict[str, list[int]] | None


def test_any_other_compile_through_typing_is_the_builtins(cache: None) -> None:
    tree = typing.compile("x + 1", "<string>", "eval", ast.PyCF_ONLY_AST)  # type: ignore[attr-defined]
    assert isinstance(tree, ast.Expression)
    with pytest.raises(SyntaxError):
        typing.compile("x +", "<string>", "eval")  # type: ignore[attr-defined]
    assert all(key.startswith(("exec\n", "eval\n")) for key in code_cache._codes)


def test_what_a_start_compiled_is_kept_sealed_and_read_back(cache: None) -> None:
    _shapes()[1]()
    code_cache.keep()
    path = code_cache.cache_path()
    assert path.stat().st_mode & 0o777 == 0o600
    assert code_cache._read().keys() == code_cache._codes.keys()


def _plant(path: Path, codes: dict[str, Any], key: bytes | None = None) -> None:
    """A cache file as a command or another user would write it (sealed with ``key`` when given)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = marshal.dumps(codes)
    path.write_bytes(
        (_seal(key, sealed_as(b"mcp-guard compiled code", path), data) if key else b"0" * 64) + b"\n" + data
    )
    path.chmod(0o600)


def _marker_code(marker: Path) -> dict[str, Any]:
    """A dataclass's text mapped to code that writes ``marker`` when it runs."""
    text = "def __create_fn__():\n def __init__(self):\n  pass\n return __init__"
    evil = compile(f"open({str(marker)!r}, 'w').close()\n" + text, "<string>", "exec")
    return {"exec\n" + text: evil}


def test_attack_planted_compiled_code_without_the_users_seal_is_never_run(cache: None, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _plant(code_cache.cache_path(), _marker_code(marker))
    assert code_cache._read() == {}
    assert not marker.exists()


def test_attack_compiled_code_sealed_for_another_file_kind_is_not_read(cache: None, tmp_path: Path) -> None:
    key = registry.user_key()
    assert key is not None
    path = code_cache.cache_path()
    _plant(path, _marker_code(tmp_path / "ran"), key)
    assert code_cache._read()  # sealed as the cache: read
    data = marshal.dumps(_marker_code(tmp_path / "ran"))
    path.write_bytes(_seal(key, sealed_as(b"mcp-guard start-up record", path), data) + b"\n" + data)  # a record's seal
    assert code_cache._read() == {}


def test_attack_compiled_code_others_can_write_or_reached_through_a_link_is_not_read(
    cache: None, tmp_path: Path
) -> None:
    key = registry.user_key()
    assert key is not None
    path = code_cache.cache_path()
    _plant(path, _marker_code(tmp_path / "ran"), key)
    path.chmod(0o622)
    assert code_cache._read() == {}
    elsewhere = tmp_path / "elsewhere.bin"
    _plant(elsewhere, _marker_code(tmp_path / "ran"), key)
    path.unlink()
    path.symlink_to(elsewhere)
    assert code_cache._read() == {}


@pytest.mark.parametrize("content", [[1, 2], {"exec\nx": 1}, {1: compile("1", "<string>", "eval")}])
def test_a_sealed_cache_holding_anything_but_text_and_code_is_not_used(cache: None, content: Any) -> None:
    key = registry.user_key()
    assert key is not None
    _plant(code_cache.cache_path(), content, key)
    assert code_cache._read() == {}


def test_a_cache_that_is_not_marshal_is_not_used(cache: None) -> None:
    key = registry.user_key()
    assert key is not None
    path = code_cache.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(
        _seal(key, sealed_as(b"mcp-guard compiled code", path), b"\xff\x00garbage") + b"\n" + b"\xff\x00garbage"
    )
    path.chmod(0o600)
    assert code_cache._read() == {}


def test_nothing_is_kept_when_not_usable(cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_cache, "_usable", False)
    _shapes()[0]()
    code_cache.keep()
    assert not code_cache.cache_path().exists()


def _first_call(script: str, workspace: Path, cwd: Path) -> None:
    argv = [
        console_script(script),
        "--audit-log",
        str(workspace.parent / "audit.jsonl"),
        "--launch-dir",
        str(workspace),
    ]
    client = RawClient(argv, cwd)
    call = {"name": "file_read", "arguments": {"path": "hello.txt"}}
    if script == "mcp-server-shell-exec":
        call = {"name": "shell_exec", "arguments": {"command": "cat hello.txt"}}
    try:
        client.initialize()
        result = client.request(1, "tools/call", call, timeout=60)["result"]
        assert not result.get("isError") and "hello" in str(result)
        client.end_input()
    finally:
        client.close()


@pytest.mark.parametrize("script", ["mcp-server-file-read", "mcp-server-shell-exec"])
def test_a_real_start_keeps_its_compiled_code_and_the_next_start_answers_with_it(
    script: str, workspace: Path, isolated_home: Path
) -> None:
    _first_call(script, workspace, workspace)
    [kept] = (isolated_home / ".local" / "state" / "mcp-guard" / "compiled").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600
    _seal_line, _, data = kept.read_bytes().partition(b"\n")
    codes = marshal.loads(data)
    assert any(key.startswith("exec\ndef __create_fn__") for key in codes)  # dataclasses' methods
    assert any(key.startswith("eval\n") for key in codes)  # pydantic's string annotations
    _first_call(script, workspace, workspace)  # read back: the same answer
    kept.write_bytes(b"not a cache\n" + os.urandom(64))
    _first_call(script, workspace, workspace)  # a broken file: compiled as before, and kept again
    assert kept.read_bytes().partition(b"\n")[2].startswith(data[:4])


def test_a_start_whose_state_directory_is_inside_an_allowed_root_keeps_no_compiled_code(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = workspace / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    _first_call("mcp-server-file-read", workspace, workspace)
    assert not (state / "mcp-guard" / "compiled").exists()
