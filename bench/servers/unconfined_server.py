"""Run mcp-server-shell-exec with the kernel sandbox taken out of the spawn: the unconfined floor of bench section 11.

    python bench/servers/unconfined_server.py TMPDIR [SERVER ARGS...]

Without the box (--sandbox off), per run ShellExec.execute calls sandbox.confine() (a fresh private TMPDIR, the
Landlock ruleset) and hands the Confinement to process.run, which applies it: Landlock (and, as root with --network
deny, a new network namespace) on a fresh spawning thread, then a vfork spawn, then the rlimits on the child with
prlimit; close() removes the TMPDIR. Even with --sandbox off the server still makes the TMPDIR and sets the
rlimits.

Here confine() returns a confinement with no ruleset and no network namespace (so process.run spawns on the event
loop thread, no spawning thread, no preexec_fn: a plain vfork), whose limit() sets nothing (no prlimit) and whose
close() removes nothing, with the fixed directory TMPDIR (made by the caller, kept between runs) - the same spawn as
process.run(..., confinement=None), the way it ran before the sandbox. Everything else in the server is unchanged,
including what is not confinement: each run's own session, the subreaper's orphan sweep after each call
(sandbox.reap_orphans, done by process.run whatever the confinement). Pass --sandbox off as well, so that the
results say `sandbox: none` and the server joins no pids cgroup at start-up.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterable
from typing import Any

from mcp_server_guard.shell.sandbox import Confinement

MODULE = "mcp_server_shell_exec"


class NoConfinement(Confinement):
    def limit(self, pid: int) -> None:
        pass  # no rlimits: the child runs with the server's own

    def close(self) -> None:
        pass  # the TMPDIR is shared by every run and belongs to the caller


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tmpdir = sys.argv[1]
    sys.argv = [MODULE, *sys.argv[2:]]
    from mcp_server_guard.shell import execution

    def confine(plan: Any, _roots: Iterable[str]) -> Confinement:
        return NoConfinement(tmpdir=tmpdir, ruleset=None, label="none", limits=plan.limits, netns=False)

    # ShellExec.execute looks the name up in its module at call time.
    vars(execution)["confine"] = confine
    runpy.run_module(MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
