"""The docs' table of the default shell rules, made from the policy itself (a hand-kept table drifted: rules
missing, reasons out of date). ``python -m mcp_server_guard.admin.rule_table --write docs/shell_exec.md`` puts it in
place, after the line "The default rules (…):" and up to the next paragraph; a test checks the docs hold it as made."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mcp_server_guard.policy import Rule, load_policy

HEADING = "The default rules ("
_SHOWN = 5  # names of a list shown before "…"


def _some(items: Sequence[str], quoted: bool = True) -> str:
    shown = [f"`{item}`" if quoted else item for item in items[:_SHOWN]]
    return ", ".join(shown) + (" …" if len(items) > _SHOWN else "")


_SINGLE_DASH = frozenset({"find", "gfind", "bfs"})  # programs whose long options take one dash (-delete, -exec)


def _flag(name: str, single: bool = False) -> str:
    return f"-{name}" if len(name) == 1 or single else f"--{name}"


def matches(rule: Rule) -> str:
    """What a rule matches, in a line: its programs (or finding), then each condition."""
    if rule.detect:
        return f"finding `{rule.detect}`"
    single = bool(rule.programs) and set(rule.programs) <= _SINGLE_DASH
    parts = []
    if rule.subcommands:
        parts.append(f"subcommand {_some(rule.subcommands)}")
    for group in rule.flags:
        names = [_flag(f, single) for f in group]
        parts.append(f"({' / '.join(names[:_SHOWN])}{' …' if len(names) > _SHOWN else ''})")
    if rule.without:
        parts.append(f"without {_some([_flag(f, single) for f in rule.without])}")
    if rule.args:
        parts.append(f"an argument {_some(rule.args)}")
    if rule.args_regex:
        parts.append(f"an argument matching {_some(rule.args_regex)}")
    if rule.targets:
        parts.append(f"a target {_some(rule.targets)}")
    parts += [f"option {_flag(option, single)} {_some(values)}" for option, values in rule.option_values.items()]
    if rule.min_positionals:
        parts.append(f"at least {rule.min_positionals} operands")
    if rule.verb_prefixes:
        parts.append(f"a second operand abbreviating {_some(rule.verb_prefixes)}")
    if rule.outside:
        parts.append("an operand outside the allowed directories")
    programs = _some(rule.programs)
    return f"{programs}: {'; '.join(parts)}" if parts else programs


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    """The table of the default rules, in the policy's order."""
    lines = ["| id | action | matches | reason |", "|---|---|---|---|"]
    for rule in load_policy().shell_exec.rules:
        reason = rule.reason + (" (on a copy, judged by what it changes in the project)" if rule.undoable else "")
        lines.append(f"| `{rule.id}` | {rule.action} | {_cell(matches(rule))} | {_cell(reason)} |")
    return "\n".join(lines) + "\n"


def put_in(text: str) -> str:
    """``text`` (the docs) with the table after HEADING replaced by the one made now."""
    start = text.index(HEADING)
    table_start = text.index("\n|", start) + 1
    end = table_start
    while end < len(text) and text.startswith("|", end):
        end = text.index("\n", end) + 1
    return text[:table_start] + table() + text[end:]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--write"] and len(args) == 2:
        path = Path(args[1])
        path.write_text(put_in(path.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.stdout.write(table())


if __name__ == "__main__":
    main()
