"""The kernel sandbox of shell_exec: a plan decided once at start-up from the flags and the kernel, then one
confinement per run.

What it guarantees: inside the box a command sees each root as its copy (or a read-only view), HOME and the system
read-only, a /tmp of its own, every server's state directory hidden, and gains no privilege (namespaces, Landlock,
seccomp, no new privileges); what runs inside the box imports the standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.shell.sandbox.layers import Deciding, begin, call_options, close_box, open_box
    from mcp_server_guard.shell.sandbox.lifetime import (
        give_up_pids_cgroup,
        pids_cgroup_ahead,
        release,
        release_all,
        sweep_stale_tmpdirs,
    )
    from mcp_server_guard.shell.sandbox.planning import (
        Confinement,
        Limits,
        NetworkMode,
        ReadScope,
        SandboxMode,
        SandboxPlan,
        SandboxUnavailable,
        confine,
        landlock_abi,
        plan,
    )

_EXPORTS = {
    "Confinement": "planning",
    "Limits": "planning",
    "NetworkMode": "planning",
    "ReadScope": "planning",
    "SandboxMode": "planning",
    "SandboxPlan": "planning",
    "SandboxUnavailable": "planning",
    "confine": "planning",
    "landlock_abi": "planning",
    "plan": "planning",
    "give_up_pids_cgroup": "lifetime",
    "pids_cgroup_ahead": "lifetime",
    "release": "lifetime",
    "release_all": "lifetime",
    "sweep_stale_tmpdirs": "lifetime",
    "Deciding": "layers",
    "begin": "layers",
    "call_options": "layers",
    "close_box": "layers",
    "open_box": "layers",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "Confinement",
    "Deciding",
    "Limits",
    "NetworkMode",
    "ReadScope",
    "SandboxMode",
    "SandboxPlan",
    "SandboxUnavailable",
    "begin",
    "call_options",
    "close_box",
    "confine",
    "give_up_pids_cgroup",
    "landlock_abi",
    "open_box",
    "pids_cgroup_ahead",
    "plan",
    "release",
    "release_all",
    "sweep_stale_tmpdirs",
]
