"""Policy files read as TOML, the packaged ones from their parsed form when it is current (issue 44).

Parsing the packaged default policy (~90 KB of TOML) with ``tomllib`` takes ~13 ms of every server's start, on the
way to the first answer. Beside each packaged ``<name>.toml`` lies ``<name>.parsed.json``: the same data as JSON
(~0.4 ms to load), with the SHA-256 of the TOML bytes it was made from. It is used only where it names exactly the
bytes read now; anything else (edited TOML, a missing or broken JSON) parses the TOML, so the JSON can make a start
slower, never different. Only the packaged directory's files have one: a JSON beside a user's policy file is never
read (it could lie where a command writes). ``python -m mcp_server_guard.policy_files`` writes them again; a test
fails while one is not current.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["PARSED_SUFFIX", "parsed_form", "read_policy_toml", "write_parsed"]

PARSED_SUFFIX = ".parsed.json"


def read_policy_toml(path: Path, packaged_dir: Path | None) -> dict[str, Any]:
    """The TOML table of ``path``; from its parsed form when ``path`` lies in ``packaged_dir`` and the form is
    current. Raises ``OSError`` or ``tomllib.TOMLDecodeError`` as ``tomllib`` would."""
    with path.open("rb") as fh:
        raw = fh.read()
    if packaged_dir is not None and path.parent == packaged_dir:
        parsed = _current_parsed(path, raw)
        if parsed is not None:
            return parsed
    import tomllib  # noqa: PLC0415 - only for a policy file of the user's (or a stale parsed form): issue 44

    return tomllib.loads(raw.decode("utf-8"))


def _current_parsed(path: Path, raw: bytes) -> dict[str, Any] | None:
    try:
        form = json.loads(path.with_name(path.stem + PARSED_SUFFIX).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(form, dict) or form.get("sha256") != hashlib.sha256(raw).hexdigest():
        return None
    data = form.get("data")
    return data if isinstance(data, dict) else None


def parsed_form(path: Path) -> str:
    """The parsed form of the TOML file ``path``, as ``write_parsed`` writes it. TOML's dates and times have no
    JSON form: a policy naming one has none (refused here)."""
    import tomllib  # noqa: PLC0415 - (see read_policy_toml)

    raw = path.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    text = json.dumps({"sha256": hashlib.sha256(raw).hexdigest(), "data": data}, ensure_ascii=False, indent=None)
    if json.loads(text)["data"] != data:
        raise ValueError(f"{path}: its data has no exact JSON form")
    return text + "\n"


def write_parsed(directory: Path) -> list[Path]:
    """Write every ``*.toml`` of ``directory``'s parsed form beside it; the files written."""
    written = []
    for toml in sorted(directory.glob("*.toml")):
        target = toml.with_name(toml.stem + PARSED_SUFFIX)
        target.write_text(parsed_form(toml), encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":  # pragma: no cover - the maintainer's command (the test checks what it writes)
    for name in write_parsed(Path(__file__).with_name("policies")):
        sys.stdout.write(f"wrote {name}\n")
