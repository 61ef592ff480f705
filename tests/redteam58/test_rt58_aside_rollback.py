"""Red team 58 F4: a deletion into a history on another file system renames the tree aside
(``.mcp-guard-<entry>.keep``) and copies it; the copy fails (a full history disk: ENOSPC, or a file the server may
not read) after someone made a file at the freed name (seconds for a big tree). Before the fix the aside was put
back only where the name was free, and the tree stayed under the hidden aside name, recorded nowhere; now it goes
beside theirs and the result says so. Shape read as data from rollback.json (plain file operations on a temporary
copy)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files import copying
from mcp_server_guard.files import kept as kept_module
from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_rt58_rollback")
pytestmark = walk.pytestmark
SCRIPT = json.loads((Path(__file__).parent / "rollback.json").read_text())["script"]
SOMEONE = b"someone's new file\n"


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EACCES])
def test_attack_copy_fails_after_someone_made_the_name_hides_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    copy, _before = walk.fresh(tmp_path / "a", SCRIPT)
    store = walk.store_at(tmp_path / "a")
    real_point = faults.point
    real_copy = copying.copy_into

    def point(label: str) -> None:
        if label.startswith("history aside"):
            (copy.root / "tree").write_bytes(SOMEONE)  # someone saves at the freed name
        real_point(label)

    def copy_into(*args: object, **kwargs: object) -> str:
        if str(args[1]).startswith(".mcp-guard-"):
            raise OSError(err, "simulated: " + ("no space" if err == errno.ENOSPC else "permission denied"))
        return real_copy(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(faults, "point", point)
    monkeypatch.setattr(kept_module, "copy_into", copy_into)
    audit = new_audit_id()
    said = ""
    try:
        outcome = Applier(store).apply([copy.read()], audit, copy.started)
        said = "; ".join(f"{c.path}: {c.what}" for c in outcome.conflicts)
    except (NotApplied, OSError) as exc:
        said = f"raised {exc!r}"
    monkeypatch.setattr(faults, "point", real_point)
    monkeypatch.setattr(kept_module, "copy_into", real_copy)
    left = sorted(p.name for p in copy.root.iterdir() if p.name.startswith(".mcp-guard-"))
    hidden = [n for n in left if n.endswith(".keep")]
    if hidden:
        entries = sorted(p.name for p in store.directory.iterdir() if p.suffix == ".json")
        walk.next_start(tmp_path / "a", copy)
        still = sorted(p.name for p in copy.root.iterdir() if p.name.startswith(".mcp-guard-"))
        named = any(h in said for h in hidden)
        pytest.fail(
            f"the user's tree is hidden in the project as {hidden} (said: {said!r}; the conflict names it: {named}); "
            f"history entries: {entries}; after the next start still there: {still}"
        )
