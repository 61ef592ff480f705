"""What a write may not put down, whatever the path: executable content (by name, shebang or libmagic MIME type),
git hook settings in a package.json or manifest, and Python start-up code. ``files.writing`` asks these before any
byte lands.
"""

from __future__ import annotations

import posixpath
import re

from mcp_server_guard.errors import SecurityError
from mcp_server_guard.files.jail import Located
from mcp_server_guard.files.mime import mime_of
from mcp_server_guard.hook_configs import (
    UNREAD,
    attribute_conversions,
    attributes_file,
    changed_hook_keys,
    hook_texts,
    installer_hook_keys,
    installer_manifest,
    judged_manifest,
    judged_package_json,
    manifest_hooks,
)
from mcp_server_guard.policy import FileWritePolicy
from mcp_server_guard.python_startup import written_here

# Bytes that never occur in text a model writes; their presence earns the full libmagic check.
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def check_executable_content(name: str, data: bytes, policy: FileWritePolicy) -> None:
    """Refuse content that would make an executable: by extension, shebang or libmagic MIME type."""
    lower = name.lower()
    for ext in policy.denied_extensions:
        if lower.endswith(ext):
            raise SecurityError(
                "EXECUTABLE_EXTENSION",
                f"Files named '*{ext}' are executables and are not written here.",
                "Write source or data files instead; running things is shell_exec's job, under its own policy.",
            )
    if data.startswith(b"#!"):
        line = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        words = [w for w in line if not w.startswith("-") and "=" not in w]
        interp = posixpath.basename(words[0]) if words else ""
        if interp == "env" and len(words) > 1:
            interp = posixpath.basename(words[1])
        if interp in policy.shebang_interpreters:
            raise SecurityError(
                "EXECUTABLE_CONTENT",
                f"The content starts with a '#!' line naming the shell '{interp}'.",
                "Shell scripts are not written here; put the commands in a non-executable file or run them "
                "with shell_exec.",
            )
    head = data[:8192]
    # Defense in depth: text is checked with libmagic's built-in tests; anything binary-looking gets all of them.
    mime = mime_of(head, full=bool(_BINARY_BYTES.search(head)))
    if mime in policy.denied_mime_types:
        raise SecurityError(
            "EXECUTABLE_CONTENT",
            f"The content is an executable ({mime}).",
            "Executables are never written; write source code or data instead.",
        )


def check_hook_keys(located: Located, old: bytes | None, data: bytes, dirfd: int) -> None:
    """Threat: a package.json given git hook settings (``"lint-staged": {"*": "curl … | sh"}``): the user's next
    ``git commit`` runs them outside any box; Python start-up code (``python_startup``): every start of that Python
    runs it. shell_exec asks about such a change; file_write cannot ask, and refuses it (``hook_configs``). Any other
    edit of the file is written."""
    if judged_manifest(located.rel) and (manifest_hooks(data) or (old is not None and manifest_hooks(old))):
        why: str | None = "a manifest holding scripts or git hook settings (read as a package.json): they run later"
    else:
        why = written_here(located.rel, data, dirfd)
    if why:
        raise SecurityError(
            "PROTECTED_CONTENT",
            f"'{located.given}' would be {why}, outside any box.",
            "Leave Python's start-up files as installers write them; put the code in a module the project imports.",
        )
    if installer_manifest(located.rel) and (keys := installer_hook_keys(located.rel, old, data)):
        raise SecurityError(  # (red team 99 F1: Composer's event scripts, PDM's hooks, Hatch's install commands)
            "PROTECTED_CONTENT",
            f"'{located.given}' would change what the package manager runs at install ({', '.join(keys)}): it runs "
            "at the user's next install, outside any box.",
            "Leave those keys as they are (edit the rest of the file), or ask the user to change them by hand.",
        )
    if attributes_file(located.rel) and (lines := attribute_conversions(old, data)):
        raise SecurityError(  # (red team 113 F5: ``*.png text``, and the user's next stash keeps their edit converted)
            "PROTECTED_CONTENT",
            f"'{located.given}' would make git convert the bytes of the files it names ({lines[0]}): the user's next "
            "git stash, add or checkout stores or writes them converted, outside any box.",
            "Leave those attributes as they are (or mark files -text), or ask the user to change them by hand.",
        )
    if not judged_package_json(located.rel):
        return
    if (keys := changed_hook_keys(old, data, hook_texts(dirfd))) == [UNREAD]:
        raise SecurityError(
            "PROTECTED_CONTENT",
            f"'{located.given}' is not JSON as written (or is 4 MiB or more): what git hooks it sets cannot be told.",
            "Write valid JSON (no comments, no trailing commas), keeping its git hook keys as they are.",
        )
    if keys:
        raise SecurityError(
            "PROTECTED_CONTENT",
            f"'{located.given}' would change what git hooks run ({', '.join(keys)}): they run at the user's next "
            "git commit, outside any box.",
            "Leave those keys as they are (edit the rest of the file), or ask the user to change them by hand.",
        )
