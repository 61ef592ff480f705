"""Effects, not strings: what a command changed on its copy of the project, judged and applied by the one guarded
writer, and undone on request.

``area`` (where the copies live), ``changeset`` (what a command changed, as data), ``upper`` (reading a copy's
upper layer, with ``names`` for the names of one file), ``escapes`` (a project's own overlay attributes shown as
they are), ``xattrs`` (attributes across the copy), ``effects`` (judging it, with ``refusals`` for what is refused
path by path and the modes a command grants, ``git_verdicts`` for git's own files and ``git_index`` for what git
has), ``apply`` (applying, undoing, recovering after a crash: ``plan`` the steps, ``what`` the call they are for,
``journal`` their sealed journal, with ``narrow`` for its JSON read back, ``undoing`` an undo's steps, ``steps``
each step with ``placing`` for what lands whole, ``nofollow`` the file operations they are made of) and
``transactions`` (one call's whole round, with ``held`` for change sets waiting for a yes and ``results`` for what
the result tells).

What it guarantees: a command never writes the real tree; what it changed on its copy is judged by its effects and
lands through steps that work beneath the root's descriptor and follow no link, each pre-image kept first, so that
one call can be undone exactly; an apply or undo killed at any step is finished or gone back whole by the next start
(its journal is sealed, and checked step by step against the history before anything is replayed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.changes.apply import Applier, UndoConflict
    from mcp_server_guard.changes.area import CopyArea, possible_areas
    from mcp_server_guard.changes.changeset import Change, ChangeSet
    from mcp_server_guard.changes.effects import Judgement, judge
    from mcp_server_guard.changes.git_index import has_copy
    from mcp_server_guard.changes.held import Held
    from mcp_server_guard.changes.nofollow import now_ns
    from mcp_server_guard.changes.recovery import recover
    from mcp_server_guard.changes.results import Settled
    from mcp_server_guard.changes.transactions import Transactions
    from mcp_server_guard.changes.undo_judged import rechecks_for
    from mcp_server_guard.changes.upper import read_upper

_EXPORTS = {
    "possible_areas": "area",
    "Applier": "apply",
    "Change": "changeset",
    "ChangeSet": "changeset",
    "CopyArea": "area",
    "Held": "held",
    "Judgement": "effects",
    "Settled": "results",
    "Transactions": "transactions",
    "UndoConflict": "apply",
    "has_copy": "git_index",
    "judge": "effects",
    "now_ns": "nofollow",
    "read_upper": "upper",
    "rechecks_for": "undo_judged",
    "recover": "recovery",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "Applier",
    "Change",
    "ChangeSet",
    "CopyArea",
    "Held",
    "Judgement",
    "Settled",
    "Transactions",
    "UndoConflict",
    "has_copy",
    "judge",
    "now_ns",
    "possible_areas",
    "read_upper",
    "rechecks_for",
    "recover",
]
