"""Benchmark of mcp-server-file-read, mcp-server-file-write and mcp-server-shell-exec against their floors, in one run.

    uv run python -m bench [--quick] [--only read|write|shell|memory]

Measures, each figure beside its floor:

1. cold start, spawn -> initialize result (legacy handshake, protocolVersion 2025-11-25, raw JSON lines):
   mcp-server-file-read vs a bare mcp-SDK server with one trivial tool (bench/servers/bare_server.py);
   `python -c pass` for context. Spawns are interleaved so drift hits all three alike.
2. 4 KiB read, per call over a minimal raw JSON-RPC client: vs a no-MCP in-process read (open+read+sha256)
   and vs the bare server's trivial tool over the same raw client; plus the same read via the SDK's own
   stdio client (`mcp.Client(..., mode="legacy")`).
3. whole 10 MiB text file (80-byte lines) with max_read_bytes raised to 16 MiB by a policy file: per call
   via the raw client (time to the full response line, and with json.loads of it) vs the in-process read;
   the server's peak RSS (VmHWM); and the same read via the SDK client.
4. 4 KiB write with fsync (mcp-server-file-write), per call over the raw client, (a) new files (distinct paths,
   overwrite false) and (b) the same file overwritten (overwrite true, which also saves the old content to the
   history store): vs a no-MCP in-process atomic write in the same directory (temp + fsync + rename + fsync dir;
   for (b) also with a durable backup copy as the history store makes) and vs the bare server's trivial tools;
   plus the server-side tool time (audit durationMs).
5. 10 MiB write (one call, 80-byte ASCII lines, policy raises max_write_bytes to 16 MiB): new file and overwrite,
   vs the in-process atomic write (interleaved call by call with the server's, so both meet the same disk
   state); then where the time goes, as a ladder of servers fed the same 10 MiB request into a trivial tool:
   raw JSON lines (1 MiB reads + json.loads, bench/servers/raw_server.py) -> the SDK stdio transport alone
   (bench/servers/transport_server.py) -> a bare MCPServer (`size` tool) -> file_write (with its audit durationMs);
   each with the time until the server had drained the request from the pipe (client write done) and the
   server's CPU time per call. In-process: json.loads and the SDK's validate_json of the same request line,
   sha256, str.encode. The servers' VmHWM.
6. A cProfile of file_write over the 10 MiB writes, all threads (bench/servers/profile_server.py).
7. shell_exec `echo hi` (tree-sitter parse + policy + `/bin/bash --noprofile --norc -c`), per call over the raw
   client: vs no-MCP floors from the same run - `subprocess.run([bash, ..., "echo hi"], capture_output=True)`,
   `subprocess.run(["/bin/true"])`, the server's own process runner (mcp_server_guard.shell.process.run) called
   in-process, parse + policy (PolicyEngine.decide) in-process - and the bare server's trivial tool; the argv form
   (`{"command": "echo", "args": ["hi"]}`, no shell); the server-side tool time (audit durationMs) split into
   process.run (the result's durationMs) and the rest, beside in-process ShellExec.prepare / build_env / result model.
8. shell_exec printing 50 MB (`head -c 50000000 /dev/zero | tr '\\0' x`), head + tail returned: per call to the
   response line vs the command to /dev/null, an in-process bounded read (64 KiB reads into head + tail) and the
   server's process.run in-process; the server's peak RSS (VmHWM) vs its idle RSS and the bare server's; where the
   peak comes from, on fresh servers: the 50 MB with maxOutputBytes at 1 KiB (buffers only), 1 MiB of output without
   the flood, the bare server's `blob` tool returning 1 MiB (the SDK serialising a ~2 MiB response), and a
   tracemalloc split of a call (bench/servers/memtrace_server.py); the same 50 MB calls on a `--sandbox off` server and
   on the unconfined one (see 11).
9. 16 concurrent `sleep 1` on one connection (16 requests written at once, wall until the 16th response) vs 16
   `bash -c "sleep 1"` started at once without MCP and the bare server's async `sleep` tool; and on a
   `--sandbox off` server and the unconfined one.
10. A cProfile of shell_exec over `echo hi` calls, all threads.
11. The box's cost on `echo hi`: five shell_exec servers called in turn (interleaved): the floor, the server with
    the sandbox taken out of its spawn (bench/servers/unconfined_server.py: no box, no per-call TMPDIR, ruleset or
    rlimits, a plain vfork); `--sandbox off` (a private TMPDIR per call and the rlimits, no box); the default
    `--sandbox auto` (the box: bubblewrap once per server, per call a pre-forked init with its own PID and mount
    namespaces, no capabilities, seccomp, Landlock); `--network deny` and `--sandbox-read jail`. Round trip,
    server-side tool time (audit durationMs) and the run (result durationMs) of each, the `sandbox` label each
    reports; then a round with SANDBOX_IDLE_S of quiet before every call, as a client that thinks between calls
    makes them. In-process what-ifs: a bubblewrap per command beside bash alone, and the box's one-off start.

Sections 7-10 run against the default (sandboxed) server, and check that its results say the expected label.

Everything runs in a temporary directory; the servers are subprocesses on pipes (no network).
Prints a markdown table and writes bench/results/latest.json (latest-<part>.json with --only).
"""
