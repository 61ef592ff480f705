"""The box's status lines (``shell.sandbox.worker`` says them, ``shell.in_box.status_line`` reads them once): a typed
value, whatever the line holds."""

from __future__ import annotations

import json

from mcp_server_guard.shell.in_box import StatusLine, status_line


def line(message: object) -> bytes:
    return json.dumps(message).encode()


def test_an_exit_line_is_read_whole_into_a_typed_value() -> None:
    said = status_line(
        line(
            {
                "exit": 3,
                "settled": True,
                "untouched": True,
                "stopped": 2,
                "moved": [7, "x"],
                "renamed": ["/p/n", 5],
                "origins": [["/p/n", "/p/h1", 9], ["/p/m", "/p/h2", True], ["bad"], "worse"],
            }
        )
    )
    assert (said.exit, said.settled, said.untouched, said.stopped) == (3, True, True, 2)
    assert said.moved.linked == frozenset({7}) and said.moved.files == frozenset({"/p/n"})
    assert said.moved.origins == frozenset({("/p/n", "/p/h1", 9)})  # a bool is no inode number, a short item none


def test_a_copys_name_an_error_and_a_listener_line_are_told_apart() -> None:
    assert status_line(line({"txn": "c1"})) == StatusLine(txn="c1")
    assert status_line(line({"error": 28, "message": "no space"})).error == (28, "no space")
    assert status_line(line({"net": 1})) == StatusLine()
    assert status_line(line(["not", "a", "dict"])) == StatusLine()


def test_values_of_another_type_are_left_at_their_defaults() -> None:
    said = status_line(line({"exit": 0, "settled": "yes", "untouched": 1, "stopped": "many", "moved": {}}))
    assert (said.settled, said.untouched, said.stopped, said.moved.linked) == (False, False, 0, frozenset())
