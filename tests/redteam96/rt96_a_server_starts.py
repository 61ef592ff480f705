"""A server of the user starts (it registers, as ``serving.launch._register`` does): run as the user, without
CAP_DAC_OVERRIDE, by test_rt96_f5 (its registry: ``$MCP_GUARD_RUNTIME_DIR``)."""

from __future__ import annotations

from mcp_server_guard import registry

registration = registry.register([], [], writes=False)
if registration is not None:
    registration.close()
print("registered" if registration is not None else "no registry")
