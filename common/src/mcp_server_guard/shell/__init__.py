"""Shell guards: the string layer (``shell.strings``: the parser and the policy rules, one entry point), the
process runner, execution, jobs, egress and the approval gate; the kernel sandbox is in ``shell.sandbox``.

What it guarantees: a command runs only after the policy's verdict (deny, ask, allow) and, where asked, the person's
yes; every run has a timeout, bounded output, and its whole process tree is ended with it; with the box, a command
works on a copy of the roots and its network goes through the egress policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.shell.approval import Approval, ApprovalForm, Checked, NoQuestion, question, require_approval
    from mcp_server_guard.shell.egress import EgressProxy
    from mcp_server_guard.shell.environment import base_env, build_env
    from mcp_server_guard.shell.execution import BASH, Prepared, ShellExec, limit_hit
    from mcp_server_guard.shell.grants import SessionApprovals
    from mcp_server_guard.shell.process import REGISTRY, RunResult, run
    from mcp_server_guard.shell.sandbox.planning import limits_of
    from mcp_server_guard.shell.strings import PolicyEngine, TooComplex, Verdict, check_examples, parse

_EXPORTS = {
    "SessionApprovals": "grants",
    "ApprovalForm": "approval",
    "Approval": "approval",
    "BASH": "execution",
    "Checked": "approval",
    "EgressProxy": "egress",
    "NoQuestion": "approval",
    "PolicyEngine": "strings",
    "Prepared": "execution",
    "REGISTRY": "process",
    "RunResult": "process",
    "ShellExec": "execution",
    "TooComplex": "strings",
    "Verdict": "strings",
    "check_examples": "strings",
    "base_env": "environment",
    "build_env": "environment",
    "limit_hit": "execution",
    "limits_of": "sandbox.planning",
    "parse": "strings",
    "question": "approval",
    "require_approval": "approval",
    "run": "process",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BASH",
    "REGISTRY",
    "Approval",
    "ApprovalForm",
    "Checked",
    "EgressProxy",
    "NoQuestion",
    "PolicyEngine",
    "Prepared",
    "RunResult",
    "SessionApprovals",
    "ShellExec",
    "TooComplex",
    "Verdict",
    "base_env",
    "build_env",
    "check_examples",
    "limit_hit",
    "limits_of",
    "parse",
    "question",
    "require_approval",
    "run",
]
