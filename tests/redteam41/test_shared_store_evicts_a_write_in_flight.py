"""Two file_write servers sharing one history store (documented: "several servers may share the store"): server B's
eviction takes server A's backup while A's write is still in flight — between A's copy of the previous content and
its rename — so A's write lands over a file whose only copy is gone, and A's result still says "previous content
saved as <id>". `mcp-guard undo` of A's call then fails: the old content is lost.

How it is shown: server A runs with ``MCP_GUARD_KILL_TRACE`` pointed at a FIFO, so every fault point of A opens the
FIFO and blocks until the test reads it (nothing is killed: the trace is a pause). A is held at the point just
before its rename (``write hello.txt``), after its backup and its pending record are written. Server B (same
history, ``history_max_entries = 1``) writes two other files at once: the first saves its backup and waits for the
tree lock A holds; the second's save takes B over the bound, and its eviction (a fresh scan) removes the oldest calls
— A's, still running in another process, neither noted in ``.owners/`` nor named by a journal (and B's own first
write, waiting to land, with it). A is then let go. (The window is only smaller, not absent, with large bounds.)

Why: ``HistoryStore.save`` wraps only the copy in ``running()`` and ``_in_flight``; from then until the rename a
write's backup is protected by nothing another process can see (``_evict`` spares this process's running calls,
live servers' in-flight notes and journals only). To pass: keep the write's id noted (in ``.owners/``) or its call
marked running — visible to other processes — until the write has landed or been dropped; or have eviction spare
the entries named by a ``pending`` call record (a write's record is pending from before its rename to after it)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from support.redteam import FW, mcp_guard, started


class Pauser:
    """Reads A's fault-point trace from a FIFO one point at a time; stops reading (A blocks at its next point) after
    the point whose label starts with ``stop_after``, until ``release``."""

    def __init__(self, fifo: Path, stop_after: str) -> None:
        self.fifo, self.stop_after = fifo, stop_after
        self.labels: list[str] = []
        self.paused = threading.Event()
        self.go = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            fd = os.open(self.fifo, os.O_RDONLY)  # blocks until A opens it for its next point
            data = b""
            while chunk := os.read(fd, 65536):
                data += chunk
            os.close(fd)
            lines = data.decode().splitlines()
            self.labels += lines
            if any(line.split(" ", 1)[1].startswith(self.stop_after) for line in lines if " " in line):
                self.paused.set()
                self.go.wait(120)
                self.go.clear()
                self.stop_after = "\0never"

    def release(self) -> None:
        self.go.set()


def test_another_servers_eviction_takes_a_write_s_backup_before_it_lands(workspace: Path, tmp_path: Path) -> None:
    root, state = workspace, tmp_path / "state"
    precious = "the only copy of this text\n"
    (root / "hello.txt").write_text(precious)
    (root / "other.txt").write_text("other\n")
    (root / "third.txt").write_text("third\n")
    policy = tmp_path / "p.toml"
    policy.write_text("[file_write]\nhistory_max_entries = 1\n", encoding="utf-8")
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    pauser = Pauser(fifo, "record ")  # after the pending record: the next point is the one just before the rename
    a = started(FW, root, state, "--policy", str(policy), env={"MCP_GUARD_KILL_TRACE": str(fifo)})
    b = started(FW, root, state / "b", "--policy", str(policy), history=state / "history")  # A's history
    try:
        a.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "file_write", "arguments": {"path": "hello.txt", "content": "new\n",
                                                               "overwrite": True}}})  # fmt: skip
        assert pauser.paused.wait(60), f"A never reached its pending record: {pauser.labels}"
        kept = [p for p in (state / "history").glob("*.data")]
        assert len(kept) == 1, kept  # A's backup, saved
        # B's writes: the first saves its backup and then waits for the tree lock A holds; the second's save takes
        # B's count over the bound and evicts the oldest calls — A's first. A is let go as soon as its backup is gone
        # (or after 20 s).
        for id_, name in ((10, "other.txt"), (11, "third.txt")):
            b.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                    "params": {"name": "file_write", "arguments": {"path": name, "content": "b\n",
                                                                   "overwrite": True}}})  # fmt: skip
            time.sleep(1.0)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and kept[0].exists():
            time.sleep(0.05)
        pauser.release()
        while True:
            message = a.recv(timeout=60)
            if message.get("id") == 5:
                break
        answered: set[object] = set()
        while answered != {10, 11}:
            answered.add(b.recv(timeout=60).get("id"))
    finally:
        pauser.release()
        a.close()
        b.close()
    result = message["result"]
    assert not result.get("isError"), result
    assert (root / "hello.txt").read_text() == "new\n"
    audit_id = str(result["structuredContent"]["auditId"])
    backup = str(result["structuredContent"]["backup"])
    undone = mcp_guard("undo", audit_id, "--history-dir", str(state / "history"),
                       "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
    assert undone.returncode == 0 and (root / "hello.txt").read_text() == precious, (
        f"A's write landed saying its previous content was saved as {backup}, but another server evicted it while "
        f"A was still writing: {sorted(p.name for p in (state / 'history').iterdir())}; undo: {undone.stderr}"
    )
