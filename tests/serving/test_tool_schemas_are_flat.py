"""Every tool of every server publishes flat schemas, the output's too (made on first use: ``ToolShape``).

A small model (and Ollama's tool format) chokes on a property with more than one JSON type. The input schema is
made and checked when the tool is added; the output schema only when ``tools/list`` first shows it (issue 44: a
start answered from its record never needs it before its first result), so a model without a flat form is refused
here, by this test, rather than at start-up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.memory import build


def _single_typed(schema: dict[str, object]) -> bool:
    for prop in schema.get("properties", {}).values():  # type: ignore[attr-defined]
        if not isinstance(prop, dict) or not isinstance(prop.get("type"), str) or "anyOf" in prop:
            return False
        if prop["type"] == "object" and not _single_typed(prop):
            return False
        items = prop.get("items")
        if isinstance(items, dict) and items.get("type") == "object" and not _single_typed(items):
            return False
    return True


@pytest.mark.parametrize("name", ["file_read", "file_write", "shell_exec"])
def test_every_tool_publishes_a_flat_output_schema_made_on_first_use(tmp_path: Path, name: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = build(name, workspace, history=tmp_path / "history")
    assert server.tools.shapes
    for spec in server.tools.specs.values():
        shape = server.tools.shapes[spec.name]
        assert "output_schema" not in vars(shape)  # not made by the start
        listed = server.tools.tools_list_result()["tools"]
        assert "output_schema" in vars(shape)  # made by the first tools/list, then kept
        output = next(tool for tool in listed if tool["name"] == spec.name)["outputSchema"]
        assert output is shape.output_schema and output["properties"]
        assert _single_typed(output) and _single_typed(shape.input_schema)
