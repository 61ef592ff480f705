"""Run mcp-server-shell-exec with the kernel sandbox taken out of the spawn: the unconfined floor of bench section 11.

    python bench/unconfined_server.py TMPDIR [SERVER ARGS...]

Per run, ShellExec.execute calls sandbox.confine() (a private TMPDIR, the Landlock ruleset, a pids cgroup as root)
and hands the confinement's child set-up to process.run as its preexec_fn - which makes subprocess fork the server
instead of vfork-ing it, even with --sandbox off, whose set-up still applies the rlimits. Here confine() returns a
confinement with no set-up, no ruleset, no cgroup and the fixed directory TMPDIR (kept between runs), so process.run
spawns the way it did before the sandbox (vfork); everything else in the server is unchanged. Pass --sandbox off
as well, so that the results say `sandbox: none` and no cgroup is made at start-up.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterable
from typing import Any

from mcp_server_guard.sandbox import Confinement

MODULE = "mcp_server_shell_exec"


class NoConfinement(Confinement):
    def close(self) -> None:
        pass  # the TMPDIR is shared by every run and belongs to the caller


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tmpdir = sys.argv[1]
    sys.argv = [MODULE, *sys.argv[2:]]
    from mcp_server_shell_exec import server

    def confine(_plan: Any, _roots: Iterable[str]) -> Confinement:
        return NoConfinement(tmpdir=tmpdir, ruleset=None, setup=None, label="none")  # type: ignore[arg-type]

    server.confine = confine  # type: ignore[attr-defined,assignment]  # ShellExec.execute looks the name up at call time
    runpy.run_module(MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
