"""What a 7B model and the agent CLI that spawns us see: flat schemas, wrong calls answered with a call that works,
the contract facts on every result, the permission modes, and a running command's progress.

Through the real console scripts, in both protocol eras where the era matters.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from mcp_server_guard.errors import ParamError
from mcp_server_guard.serving.calls import flat_schema, normalize_arguments
from mcp_server_guard.tools.shell_results import said_read_only
from support import MODES, error_of, serve, text_of

pytestmark = pytest.mark.anyio
CORPUS_DIR = Path(__file__).parents[1] / "corpus"
SERVERS = {
    "file_read": "mcp-server-file-read",
    "file_write": "mcp-server-file-write",
    "shell_exec": "mcp-server-shell-exec",
}
SEED_INPUTS = {  # seed 004: name -> (type, required)
    "file_read": {"path": ("string", True)},
    "file_write": {"path": ("string", True), "content": ("string", True), "overwrite": ("boolean", False)},
    "shell_exec": {"command": ("string", True), "args": ("array", False), "cwd": ("string", False)},
}
SEED_OUTPUTS = {
    "file_read": {"content": "string"},
    "file_write": {"success": "boolean"},
    "shell_exec": {"stdout": "string", "stderr": "string", "exitCode": "integer"},
}


def server_args(tool: str, tmp_path: Path) -> tuple[str, ...]:
    return ("--history-dir", str(tmp_path / "history")) if tool == "file_write" else ()


async def published(tool: str, workspace: Path, tmp_path: Path) -> Any:
    async with serve(SERVERS[tool], workspace, *server_args(tool, tmp_path)) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == [tool]
    return tools[0]


def assert_flat(schema: dict[str, Any], where: str) -> None:
    text = json.dumps(schema)
    for word in ('"anyOf"', '"oneOf"', '"allOf"', '"$ref"', '"$defs"', '"$schema"', '"null"'):
        assert word not in text, f"{where}: {word} in {text}"
    assert schema["type"] == "object" and isinstance(schema["required"], list), where
    for name, prop in schema["properties"].items():
        assert isinstance(prop.get("type"), str), f"{where}.{name} has no single type: {prop}"
        if prop["type"] == "array":
            assert isinstance(prop["items"].get("type"), str), f"{where}.{name}: items without a type"
        if prop["type"] == "object":
            extra = prop.get("additionalProperties")
            assert "properties" in prop or (isinstance(extra, dict) and isinstance(extra.get("type"), str)), name


def as_ollama_tool(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Ollama's tool definition (api.Tool): a property is {type: one string, description, items, enum}; anything
    else is dropped by its decoder, so a schema that needs more loses meaning on the way."""
    properties = {}
    for key, prop in schema["properties"].items():
        kind = prop["type"]
        assert isinstance(kind, str), f"Ollama takes one type string, got {kind!r}"
        kept: dict[str, Any] = {"type": kind, "description": prop.get("description", "")}
        if "items" in prop:
            kept["items"] = prop["items"]
        if "enum" in prop:
            kept["enum"] = prop["enum"]
        properties[key] = kept
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "required": schema["required"], "properties": properties},
        },
    }


# -- schemas ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", list(SERVERS))
async def test_every_published_schema_is_flat_and_keeps_the_seed_contract(
    tool: str, workspace: Path, tmp_path: Path
) -> None:
    published_tool = await published(tool, workspace, tmp_path)
    inputs, outputs = published_tool.input_schema, published_tool.output_schema
    assert_flat(inputs, f"{tool}.inputSchema")
    assert outputs is not None
    assert_flat(outputs, f"{tool}.outputSchema")
    assert inputs["additionalProperties"] is False  # an unknown key is an error, and the schema says so
    for name, (kind, required) in SEED_INPUTS[tool].items():
        assert inputs["properties"][name]["type"] == kind
        assert (name in inputs["required"]) is required
    assert [n for n in inputs["required"]] == [n for n, (_, req) in SEED_INPUTS[tool].items() if req]
    for name, kind in SEED_OUTPUTS[tool].items():
        assert outputs["properties"][name]["type"] == kind and name in outputs["required"]
    assert {"auditId", "policyDecision", "mode"} <= set(outputs["required"])


@pytest.mark.parametrize("tool", list(SERVERS))
async def test_schemas_go_through_ollamas_tool_format_without_losing_anything(
    tool: str, workspace: Path, tmp_path: Path
) -> None:
    published_tool = await published(tool, workspace, tmp_path)
    schema = published_tool.input_schema
    ollama = as_ollama_tool(tool, published_tool.description or "", schema)
    parameters = ollama["function"]["parameters"]
    assert parameters["required"] == schema["required"]
    for key, prop in schema["properties"].items():
        seen = parameters["properties"][key]
        assert seen["type"] == prop["type"] and seen["description"] == prop["description"]
        assert seen.get("items") == prop.get("items")
        # What Ollama drops is only advice the server enforces itself (bounds, defaults, a pattern).
        assert set(prop) - set(seen) <= {"default", "minimum", "exclusiveMinimum", "pattern", "additionalProperties"}


def test_a_model_whose_schema_has_no_flat_form_is_refused() -> None:
    with pytest.raises(ValueError, match="non-null types"):
        flat_schema({"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}})


# -- arguments -------------------------------------------------------------------------------------

READ_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "offset": {"type": "integer", "minimum": 1},
        "limit": {"type": "integer", "minimum": 1},
    },
    "required": ["path"],
}
SHELL_SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "timeoutSeconds": {"type": "number", "exclusiveMinimum": 0},
        "overwrite": {"type": "boolean"},
    },
    "required": ["command"],
}


def refusal(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> ParamError:
    with pytest.raises(ParamError) as caught:
        normalize_arguments(tool, schema, arguments)
    return caught.value


def test_unambiguous_values_are_taken_in_the_schemas_type() -> None:
    assert normalize_arguments("file_read", READ_SCHEMA, {"path": "a", "limit": "10", "offset": 2.0}) == {
        "path": "a",
        "limit": 10,
        "offset": 2,
    }
    assert normalize_arguments(
        "shell_exec",
        SHELL_SCHEMA,
        {"command": "ls", "args": '["-l"]', "env": {"N": 1}, "timeoutSeconds": "2.5", "overwrite": "true"},
    ) == {"command": "ls", "args": ["-l"], "env": {"N": "1"}, "timeoutSeconds": 2.5, "overwrite": True}
    assert normalize_arguments("file_read", READ_SCHEMA, {"path": "a", "limit": None}) == {"path": "a"}


def test_an_unknown_key_is_an_error_that_names_the_key_and_the_name_meant() -> None:
    error = refusal("shell_exec", SHELL_SCHEMA, {"command": "make", "timeout": 5})
    assert "'timeout'" in error.message and "did you mean 'timeoutSeconds'" in error.message
    assert error.example == {"name": "shell_exec", "arguments": {"command": "make", "timeoutSeconds": 5}}
    assert error.suggestion.endswith(json.dumps(error.example))


def test_a_misspelled_required_name_shows_the_corrected_call() -> None:
    error = refusal("file_read", READ_SCHEMA, {"file_path": "notes.md"})
    assert "'file_path'" in error.message and "'path'" in error.message
    assert error.example == {"name": "file_read", "arguments": {"path": "notes.md"}}
    shell = refusal("shell_exec", SHELL_SCHEMA, {"cmd": "ls -la"})
    assert shell.example == {"name": "shell_exec", "arguments": {"command": "ls -la"}}


def test_wrong_shapes_get_examples_built_from_the_models_own_values() -> None:
    assert refusal("shell_exec", SHELL_SCHEMA, {"command": "ls", "args": "-la src"}).example == {
        "name": "shell_exec",
        "arguments": {"command": "ls", "args": ["-la", "src"]},
    }
    assert refusal("shell_exec", SHELL_SCHEMA, {"command": ["ls", "-la"]}).example == {
        "name": "shell_exec",
        "arguments": {"command": "ls -la"},
    }
    assert refusal("file_read", READ_SCHEMA, {"input": {"path": "a.txt"}}).example == {
        "name": "file_read",
        "arguments": {"path": "a.txt"},
    }
    assert refusal("file_read", READ_SCHEMA, {"path": "a", "offset": 0}).example == {
        "name": "file_read",
        "arguments": {"path": "a", "offset": 1},
    }
    assert refusal("shell_exec", SHELL_SCHEMA, {"command": "x", "env": "A=1 B=2"}).example == {
        "name": "shell_exec",
        "arguments": {"command": "x", "env": {"A": "1", "B": "2"}},
    }


def test_wrong_call_corpus_is_answered_by_calls_that_work() -> None:
    """At least 90% of realistic wrong calls are taken as meant or refused with an example that works as sent."""
    spec = importlib.util.spec_from_file_location("calls_corpus_measure", CORPUS_DIR / "measure_calls.py")
    assert spec is not None and spec.loader is not None
    measure_calls = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = measure_calls  # dataclasses look their module up while the class is built
    spec.loader.exec_module(measure_calls)
    report = measure_calls.run()
    handled, total = report.share()
    misses = [f"{o.tool} {o.arguments}: {o.how}" for o in report.outcomes if not o.handled]
    assert total >= 60
    assert handled / total >= 0.9, misses


async def test_tilde_is_home_and_never_a_literal_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    (project / "notes.md").write_text("mine\n", encoding="utf-8")
    env_home = {"HOME": str(home)}
    fw = ("--history-dir", str(tmp_path / "history"))
    async with serve("mcp-server-file-read", project, env=env_home) as reader:
        inside = await reader.call_tool("file_read", {"path": "~/project/notes.md"})
        outside = await reader.call_tool("file_read", {"path": "~/notes.md"})
    async with serve("mcp-server-file-write", project, *fw, env=env_home) as writer:
        refused = await writer.call_tool("file_write", {"path": "~/todo/list.md", "content": "x", "createDirs": True})
    assert inside.structured_content is not None and inside.structured_content["content"] == "mine\n"
    assert error_of(outside)["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(outside)["example"] == {"name": "file_read", "arguments": {"path": "notes.md"}}
    assert error_of(refused)["code"] == "PATH_OUTSIDE_JAIL"
    assert not (project / "~").exists() and not (home / "todo").exists()


async def test_reading_a_directory_lists_what_is_in_it(workspace: Path) -> None:
    (workspace / "src").mkdir()
    for name in ("b.py", "a.py", "README.md"):
        (workspace / "src" / name).write_text("x\n", encoding="utf-8")
    (workspace / "src" / "pkg").mkdir()
    async with serve("mcp-server-file-read", workspace) as client:
        result = await client.call_tool("file_read", {"path": "src"})
    error = error_of(result)
    assert error["code"] == "IS_DIRECTORY"
    assert "pkg/, a.py, b.py, README.md" in error["message"]
    assert error["example"] == {"name": "file_read", "arguments": {"path": "src/README.md"}}


# -- the agent CLI's contract ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_every_result_carries_its_audit_id_policy_decision_and_mode(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    audit = tmp_path / "contract.jsonl"
    (workspace / "hello.txt").write_text("hello\n", encoding="utf-8")
    results = []
    for tool, arguments, refused in (
        ("file_read", {"path": "hello.txt"}, {"path": "../x"}),
        ("file_write", {"path": "new.txt", "content": "x"}, {"path": "run.sh", "content": "x"}),
        ("shell_exec", {"command": "echo hi"}, {"command": "shutdown -h now"}),
    ):
        async with serve(SERVERS[tool], workspace, *server_args(tool, tmp_path), audit=audit, mode=mode) as client:
            results.append((tool, await client.call_tool(tool, arguments), True))
            results.append((tool, await client.call_tool(tool, refused), False))
    outcomes = {
        r["audit_id"]: r
        for r in map(json.loads, audit.read_text(encoding="utf-8").splitlines())
        if r["phase"] == "outcome"
    }
    for tool, result, ok in results:
        facts = result.structured_content if ok else error_of(result)
        assert facts is not None
        assert facts["policyDecision"] == ("allow" if ok else "deny"), (tool, facts)
        assert facts["mode"] == "workspace-write"
        assert outcomes[facts["auditId"]]["policy_result"] == facts["policyDecision"]
        last = text_of(result, facts=True).splitlines()[-1]
        assert last.startswith(f"[auditId={facts['auditId']} policyDecision={facts['policyDecision']} mode=")
        if tool == "shell_exec":
            assert facts["timeoutSeconds"] == 30.0 and "timeoutSeconds=30.0" in last


async def test_read_only_mode_refuses_every_write_and_says_so_in_server_info(workspace: Path, tmp_path: Path) -> None:
    fw = ("--history-dir", str(tmp_path / "history"), "--mode", "read-only")
    async with serve("mcp-server-file-write", workspace, *fw) as client:
        instructions = client.instructions
        result = await client.call_tool("file_write", {"path": "new.txt", "content": "x"})
    assert error_of(result)["code"] == "READ_ONLY_MODE" and error_of(result)["mode"] == "read-only"
    assert instructions is not None and "read-only" in instructions
    assert not (workspace / "new.txt").exists()


async def test_read_only_mode_boxes_commands_in_a_read_only_jail(workspace: Path, tmp_path: Path) -> None:
    """Even a command the policy lets through cannot write in a read-only session: the jail is bound read-only."""
    policy = tmp_path / "lets-touch.toml"
    policy.write_text(
        '[shell_exec]\nmode = "allowlist"\nrules = [{ id = "touch", action = "allow", reason = "t", '
        'programs = ["touch", "cat"] }]\n',
        encoding="utf-8",
    )
    async with serve("mcp-server-shell-exec", workspace, "--mode", "read-only", "--policy", str(policy)) as client:
        wrote = await client.call_tool("shell_exec", {"command": "touch", "args": ["made.txt"]})
    async with serve("mcp-server-shell-exec", workspace, "--mode", "read-only", "--sandbox", "off") as client:
        denied = await client.call_tool("shell_exec", {"command": "touch made.txt"})
    out = wrote.structured_content
    assert out is not None and out["mode"] == "read-only"
    if out["sandbox"] != "none":
        assert out["exitCode"] != 0
    # Without the box nothing but the read-only allow-list keeps a command from writing: touch is not a read.
    assert error_of(denied)["code"] == "READ_ONLY_MODE"
    assert not (workspace / "made.txt").exists() or out["sandbox"] == "none"


async def test_a_refusal_the_read_only_mode_makes_says_the_mode_and_what_the_user_can_do(workspace: Path) -> None:
    # Without the box (--sandbox off) the read-only allow-list is the guard: what it refuses says the mode.
    writes = ["touch t.txt", "python3 -c \"open('t.txt', 'w').write('x')\"", "echo x > t.txt"]
    async with serve("mcp-server-shell-exec", workspace, "--mode", "read-only", "--sandbox", "off") as client:
        refused = [error_of(await client.call_tool("shell_exec", {"command": line})) for line in writes]
        read = await client.call_tool("shell_exec", {"command": "cat hello.txt"})
    for line, error in zip(writes, refused, strict=True):
        assert error["code"] == "READ_ONLY_MODE" and error["mode"] == "read-only", (line, error)
        assert "read-only" in error["message"] and "--mode workspace-write" in error["suggestion"], (line, error)
        assert "no copy" not in error["suggestion"] and "another way" not in error["suggestion"], (line, error)
    assert not read.is_error and "hello" in text_of(read)


async def test_full_access_mode_runs_unboxed_and_deny_rules_still_hold(workspace: Path) -> None:
    async with serve("mcp-server-shell-exec", workspace, "--mode", "full-access") as client:
        ran = await client.call_tool("shell_exec", {"command": "echo free"})
        denied = await client.call_tool("shell_exec", {"command": "rm -rf ~"})
    assert ran.structured_content is not None
    assert (ran.structured_content["sandbox"], ran.structured_content["mode"]) == ("none", "full-access")
    assert error_of(denied)["code"] == "COMMAND_DENIED"


async def test_full_access_instructions_say_commands_are_not_confined(workspace: Path) -> None:
    async with serve("mcp-server-shell-exec", workspace, "--mode", "full-access") as client:
        full = client.instructions or ""
    async with serve("mcp-server-shell-exec", workspace) as client:
        boxed = client.instructions or ""
    assert "unconfined" in full and "nothing outside them can be read" not in full, full
    assert "nothing outside them can be read, written or run on" in boxed, boxed


# -- the running display ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_running_command_reports_progress_with_its_last_line(workspace: Path, mode: str) -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    command = "for i in 1 2 3 4 5 6; do echo step$i; sleep 0.4; done"
    async with serve("mcp-server-shell-exec", workspace, mode=mode) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": command}, progress_callback=progress)
            quiet = await client.call_tool("shell_exec", {"command": "sleep 1.2"})
    assert result.structured_content is not None and result.structured_content["exitCode"] == 0
    assert len(seen) >= 3, seen  # 2.4 s of running: reported at least once a second
    values = [v for v, _ in seen]
    assert values == sorted(values) and values[0] > 0
    assert any(m and "last line: step" in m and "bytes of output" in m for _, m in seen), seen
    assert not quiet.is_error  # no token, no notifications: nothing to assert but that it ran


async def test_no_progress_is_sent_without_a_token(workspace: Path) -> None:
    from support import RawClient, console_script

    raw = RawClient(
        [console_script("mcp-server-shell-exec"), "--audit-log", str(workspace.parent / "a.jsonl")], workspace
    )
    try:
        raw.initialize()
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "shell_exec", "arguments": {"command": "echo a; sleep 1.5; echo b"}},
            }
        )
        messages = raw.until(7, timeout=30)
    finally:
        raw.close()
    assert [m for m in messages if m.get("method") == "notifications/progress"] == []


async def test_elicitation_answer_is_audited_as_the_humans(workspace: Path, tmp_path: Path) -> None:
    policy = tmp_path / "ask.toml"
    policy.write_text(
        '[shell_exec]\nrules = [{ id = "ask-touch", action = "ask", reason = "touch needs a yes.", '
        'programs = ["touch"] }]\n',
        encoding="utf-8",
    )
    audit = tmp_path / "ask.jsonl"

    async def yes(_ctx: ClientRequestContext, _params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": True})

    async with serve(
        "mcp-server-shell-exec", workspace, "--policy", str(policy), audit=audit, elicitation_callback=yes
    ) as client:
        result = await client.call_tool("shell_exec", {"command": "touch ok.txt"})
    out = result.structured_content
    assert out is not None and (out["policyDecision"], out["rule"]) == ("ask-approved", "ask-touch")
    record = next(json.loads(line) for line in audit.read_text().splitlines() if '"outcome"' in line)
    assert (record["approved_by"], record["reason"], record["actor"]) == (
        "human:elicitation",
        "touch needs a yes.",
        "mcp/0.1.0",
    )


# -- examples a model sends back as they are ---------------------------------------------------------------


def test_a_call_missing_a_required_argument_gets_no_runnable_example() -> None:
    for tool, schema, arguments in (
        ("file_read", READ_SCHEMA, {}),
        ("shell_exec", SHELL_SCHEMA, {}),
        ("shell_exec", SHELL_SCHEMA, {"timeoutSeconds": 5}),
    ):
        error = refusal(tool, schema, arguments)
        assert error.example is None, error.example
        assert "Call it like this" not in error.suggestion and "<" not in error.suggestion
        assert "Send the call again with 'path'" in error.suggestion or "'command'" in error.suggestion


def test_placeholder_values_from_an_example_are_refused_never_used() -> None:
    for value in ("<path>", "<file_path>", "<the path>", "< PATH >"):
        error = refusal("file_read", READ_SCHEMA, {"path": value})
        assert "placeholder" in error.message and error.example is None
    assert "placeholder" in refusal("shell_exec", SHELL_SCHEMA, {"command": "<command>"}).message
    # Markup is not a placeholder: a name of ours in angle brackets is.
    assert normalize_arguments("shell_exec", SHELL_SCHEMA, {"command": "echo", "args": ["<br>"]})["args"] == ["<br>"]


def test_a_value_that_had_to_be_left_out_gets_no_example_without_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "jobId": {"type": "string"},
            "signal": {"type": "string", "enum": ["TERM", "KILL", "INT"]},
        },
        "required": ["command"],
    }
    error = refusal("shell_exec", schema, {"command": "", "jobId": "j1", "signal": "HUP"})
    assert error.example is None  # an example without "signal" would turn a stop into a look
    assert "'signal' set to one of TERM, KILL, INT" in error.suggestion


async def test_every_example_sent_back_as_is_does_what_was_meant_or_nothing(workspace: Path, tmp_path: Path) -> None:
    fw = ("--history-dir", str(tmp_path / "history"))
    before = {p.name for p in workspace.iterdir()}
    asked: list[str] = []

    async def human(_ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    sent_back: list[tuple[str, dict[str, Any], Any]] = []
    async with (
        serve("mcp-server-file-write", workspace, *fw) as writer,
        serve("mcp-server-shell-exec", workspace, elicitation_callback=human) as shell,
    ):
        clients = {"file_write": writer, "shell_exec": shell}
        job = await shell.call_tool("shell_exec", {"command": "sleep 30", "yieldAfterSeconds": 0})
        job_id = (job.structured_content or {})["jobId"]
        wrong = [
            ("file_write", {}),
            ("file_write", {"path": "w.txt"}),
            ("file_write", {"content": "hello"}),
            ("file_write", {"path": "<path>", "content": "<content>"}),
            ("file_write", {"file_path": "meant.txt", "text": "meant\n"}),
            ("shell_exec", {}),
            ("shell_exec", {"command": "<command>"}),
            ("shell_exec", {"command": "", "jobId": job_id, "signal": "HUP"}),
        ]
        for tool, arguments in wrong:
            result = await clients[tool].call_tool(tool, arguments)
            example = error_of(result).get("example")
            if example is not None:
                again = await clients[tool].call_tool(example["name"], example["arguments"])
                sent_back.append((tool, arguments, again))
        look = await shell.call_tool("shell_exec", {"command": "", "jobId": job_id})
        await shell.call_tool("shell_exec", {"command": "", "jobId": job_id, "signal": "KILL"})
    # Only the call whose meaning was clear got an example, and it did exactly that.
    assert [(tool, arguments) for tool, arguments, _ in sent_back] == [
        ("file_write", {"file_path": "meant.txt", "text": "meant\n"})
    ]
    assert not sent_back[0][2].is_error and (workspace / "meant.txt").read_text(encoding="utf-8") == "meant\n"
    assert {p.name for p in workspace.iterdir()} - before == {"meant.txt"}  # no <path>, no w.txt
    assert asked == []  # no placeholder command was put to the human
    assert (look.structured_content or {})["status"] == "running"  # the wrong stop changed nothing


# -- the approval form: a client that answers wrong, or never ----------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_an_approval_answer_that_does_not_fit_the_form_is_the_clients_fault_not_the_models(
    workspace: Path, mode: str
) -> None:
    async def broken_client(_ctx: ClientRequestContext, _params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": "yes please", "colour": "blue"})

    async with serve("mcp-server-shell-exec", workspace, mode=mode, elicitation_callback=broken_client) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": "sudo true"})
    error = error_of(result)
    assert error["code"] == "APPROVAL_ANSWER_INVALID" and "nothing was run" in error["message"]
    assert "not of the call" in error["suggestion"] and "example" not in error


async def test_an_approval_nobody_answers_is_refused_after_the_question_bound(workspace: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[shell_exec]\nquestion_timeout_seconds = 2\n", encoding="utf-8")

    async def silent_client(_ctx: ClientRequestContext, _params: ElicitRequestParams) -> ElicitResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with serve(
        "mcp-server-shell-exec", workspace, "--policy", str(policy), elicitation_callback=silent_client
    ) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("shell_exec", {"command": "sudo touch ran"})
            after = await client.call_tool("shell_exec", {"command": "echo still here", "timeoutSeconds": 5})
    assert error_of(result)["code"] == "APPROVAL_TIMEOUT" and "2 s" in error_of(result)["message"]
    assert not (workspace / "ran").exists()
    assert "still here" in text_of(after)  # the bound is on the question only: an ordinary call is not cut


@pytest.mark.parametrize("mode", MODES)
async def test_every_result_says_its_timeout_and_the_server_says_its_roots(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with serve("mcp-server-file-read", workspace, "--allow-path", str(other), mode=mode) as client:
        read = await client.call_tool("file_read", {"path": "hello.txt"})
        refused = await client.call_tool("file_read", {"path": "/etc/passwd"})
        instructions = client.instructions or ""
    assert (read.structured_content or {})["timeoutSeconds"] == 0  # none: the contract's field, stated
    assert error_of(refused)["timeoutSeconds"] == 0
    assert "timeoutSeconds=0" in text_of(read, facts=True)
    assert f"Allowed directories: {workspace}, {other}" in instructions and f"taken from {workspace}" in instructions


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_the_approval_question_speaks_the_protocol_version_the_client_negotiated(
    workspace: Path, tmp_path: Path, version: str
) -> None:
    from support import RawClient, console_script

    raw = RawClient([console_script("mcp-server-shell-exec"), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    try:
        capabilities: dict[str, Any] = {"elicitation": {}}
        hello = {
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name": "old", "version": "1"},
        }
        assert raw.request(0, "initialize", hello)["result"]["protocolVersion"] == version
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "shell_exec", "arguments": {"command": "sudo true"}},
            }
        )
        question = raw.recv(timeout=30)
        assert question["method"] == "elicitation/create", question
        raw.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}})
        answer = raw.recv(timeout=30)
    finally:
        raw.close()
    assert ("mode" in question["params"]) is (version >= "2025-11-25")
    assert "requestedSchema" in question["params"] and answer["id"] == 1


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_read_only_mode_with_the_box_runs_any_line_and_the_kernel_refuses_its_writes(workspace: Path) -> None:
    # Issue 45 item 1: the box's read-only view, not an allow-list, keeps a read-only session from writing. Programs
    # the allow-list never named run (a linter, a builtin); a write fails in the kernel, and the result says why
    # and where to write instead; the deny rules still hold.
    (workspace / "build").mkdir()
    reads = ["exit 0", "python3 -c \"print('looked')\"", "git --version", "echo scratch > /tmp/s && cat /tmp/s"]
    writes = [
        "touch t.txt",
        "python3 -c \"open('t.txt', 'w').write('x')\"",
        "rm -rf build",
        "echo x > t.txt",
        "python3 -c \"open('t.txt', 'w')\" 2>&1",
    ]  # (said on stdout, as mypy says it)
    async with serve("mcp-server-shell-exec", workspace, "--mode", "read-only") as client:
        read = [await client.call_tool("shell_exec", {"command": line}) for line in reads]
        wrote = [await client.call_tool("shell_exec", {"command": line}) for line in writes]
        denied = await client.call_tool("shell_exec", {"command": "rm -rf ~"})
    for line, result in zip(reads, read, strict=True):
        out = result.structured_content
        assert not result.is_error and out is not None and out["exitCode"] == 0, (line, result)
        assert "bwrap" in out["sandbox"] and out["mode"] == "read-only", (line, out)
    for line, result in zip(writes, wrote, strict=True):
        out = result.structured_content
        assert not result.is_error and out is not None and out["exitCode"] != 0, (line, result)
        assert "session is read-only" in out["changes"]["reason"], (line, out)
        assert "--mode workspace-write" in text_of(result) and "$TMPDIR" in text_of(result), (line, out)
    assert not (workspace / "t.txt").exists() and (workspace / "build").is_dir()
    assert error_of(denied)["code"] == "COMMAND_DENIED"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_linters_and_type_checkers_run_in_a_read_only_session_their_caches_in_the_calls_tmp(
    workspace: Path,
) -> None:
    # Issue 45 item 1: `ruff check` and `mypy` make a cache in the project; in a read-only session they failed
    # (ruff exit 2, mypy an internal error) — their caches go to the call's own /tmp instead.
    (workspace / "m.py").write_text("def f(x: int) -> int:\n    return x\n")
    python = sys.executable
    lines = [f"{python} -m ruff check m.py", f"{python} -m mypy --no-incremental m.py", f"{python} -m mypy m.py"]
    async with serve("mcp-server-shell-exec", workspace, "--mode", "read-only") as client:
        ran = [await client.call_tool("shell_exec", {"command": line, "timeoutSeconds": 120}) for line in lines]
    for line, result in zip(lines, ran, strict=True):
        out = result.structured_content
        assert not result.is_error and out is not None and out["exitCode"] == 0, (line, text_of(result))
        assert not out["changes"]["reason"], (line, out)
    assert not (workspace / ".ruff_cache").exists() and not (workspace / ".mypy_cache").exists()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_a_commit_without_a_git_identity_says_how_to_give_one_for_the_project(workspace: Path) -> None:
    # Issue 45 item 4: HOME is read-only in the box, so `git config --global` cannot be the answer; the project's
    # own config can, and the result says so.
    git = ["git", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    subprocess.run([*git, "config", "user.useConfigOnly", "true"], check=True, timeout=30)
    async with serve("mcp-server-shell-exec", workspace) as client:
        failed = await client.call_tool("shell_exec", {"command": "git add hello.txt && git commit -qm one"})
        given = await client.call_tool(
            "shell_exec",
            {"command": "git config user.name Model && git config user.email model@example.com && git commit -qm one"},
        )
    said = text_of(failed)
    assert "Please tell me who you are" in said and "without --global" in said, said
    out = given.structured_content
    assert out is not None and out["exitCode"] == 0 and out["transaction"] == "applied", text_of(given)
    log = subprocess.run([*git, "log", "--format=%an %ae"], capture_output=True, text=True, check=True, timeout=30)
    assert log.stdout == "Model model@example.com\n"


def test_a_write_refused_by_a_read_only_file_system_is_told_whatever_the_program_calls_it() -> None:
    # Python and coreutils on stderr; node and npm as EROFS in lower case; mypy on stdout, failing.
    assert said_read_only("OSError: [Errno 30] Read-only file system: 'x'", "", 1)
    assert said_read_only("npm ERR! code EROFS\nnpm ERR! erofs: read-only file system, open", "", 1)
    assert said_read_only("", "error: OSError: [Errno 30] Read-only file system: '.mypy_cache'", 2)
    assert said_read_only("Error: EROFS: read-only file system, mkdir '/home/u/.config'", "", 0)
    # a program that succeeds printing the words (a grep over a log) says nothing of a write of its own
    assert not said_read_only("", "kernel: EXT4-fs: Remounting filesystem read-only file system", 0)
    assert not said_read_only("", "", 1)


async def test_a_redirect_to_tmp_is_refused_without_the_box_and_runs_in_the_calls_own_tmp_with_it(
    workspace: Path,
) -> None:
    line = "echo scratch > /tmp/mcp-guard-test-scratch && cat /tmp/mcp-guard-test-scratch"
    async with serve("mcp-server-shell-exec", workspace, "--sandbox", "off") as client:
        refused = await client.call_tool("shell_exec", {"command": line})
    assert error_of(refused)["code"] == "REDIRECT_OUTSIDE_JAIL"
    if shutil.which("bwrap") is None:
        return
    async with serve("mcp-server-shell-exec", workspace) as client:
        ran = await client.call_tool("shell_exec", {"command": line})
    out = ran.structured_content
    assert out is not None and "bwrap" in out["sandbox"] and out["stdout"] == "scratch\n", ran
    assert not Path("/tmp/mcp-guard-test-scratch").exists()  # the call's own /tmp, not the machine's


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_a_write_outside_the_project_says_where_to_write_instead(workspace: Path) -> None:
    # Issue 45 item 4: the system (and HOME, outside the temp directory tests keep it in) is read-only in the box; the
    # model is told where it may write, and how to pass settings.
    # (the path built at run time: a literal one is refused before running, as `> /usr/…` is)
    write = "python3 -c \"open('/u' + 'sr/mcp-guard-probe', 'w')\""
    async with serve("mcp-server-shell-exec", workspace) as client:
        home = await client.call_tool("shell_exec", {"command": write})
        inside = await client.call_tool("shell_exec", {"command": "echo x > inside.txt"})
    said = text_of(home)
    assert "Read-only file system" in said and "only the project is writable" in said, said
    assert "$TMPDIR" in said and "git -c user.name=" in said, said
    assert "only the project is writable" not in text_of(inside)
    assert (workspace / "inside.txt").read_text() == "x\n"
