"""Test support: real stdio clients of the console scripts, and the in-memory fast tier."""

from support.clients import (
    ERROR_META_KEY,
    MODES,
    SERVER_ENV,
    Human,
    RawClient,
    console_script,
    error_of,
    refused_start,
    serve,
    server_params,
    text_of,
)
from support.memory import build, in_memory
from support.processes import marker, my_children_with, processes_with, wait_until

__all__ = [
    "ERROR_META_KEY",
    "MODES",
    "SERVER_ENV",
    "Human",
    "RawClient",
    "build",
    "console_script",
    "error_of",
    "in_memory",
    "marker",
    "my_children_with",
    "processes_with",
    "refused_start",
    "serve",
    "server_params",
    "text_of",
    "wait_until",
]
