"""Red team 132 F2: makefile spellings a pre-commit hook's ``make lint`` runs that ``make_reads``/``make_expand``
still do not name, so a shell_exec command rewrites the script (or include) unasked and the user's next ``git
commit`` runs it outside the box:

* ``$(foreach t,$(LINTERS),$(eval $(call LINT_template,$(t))))`` — GNU make manual's own eval idiom (``_EVAL``
  stops at the first ``)``; ``_EVAL_DEFINED`` takes only ``$(eval $(NAME))``);
* a static pattern rule ``$(CHECKS): %: scripts/lint-%.sh`` with ``sh $<`` (its target pattern ``%`` read as a name);
* ``vpath %.sh scripts`` (``$<`` is ``scripts/lint-py.sh``; the judge names ``lint-py.sh`` at the top);
* ``$(eval -include $(LOCAL))`` (the eval's text cut at the variable's ``)``: ``$(LOCAL`` named).

Control: the same script run by a plain recipe line: the rewrite is refused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.planted import commit_runs

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(shutil.which("make") is None, reason="make is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "make_spellings.json").read_text())
CONTROLS = [case for case, spec in DATA["cases"].items() if spec["finding"] == "control"]
ATTACKS = [case for case, spec in DATA["cases"].items() if spec["finding"] != "control"]


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-make-ran"
    payload = DATA["payload"].replace("{marker}", str(marker))
    if spec.get("shell"):
        payload = "$(shell " + payload.strip() + ")\n"
    return await commit_runs(workspace, marker, "make -s lint", spec["files"], spec["planted"], payload)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_read_spelling_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_script_make_runs_at_commit(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why
