"""``globs.hidden_named``: an entry without ``*`` or ``?`` is compared as a string (issue 44: a regex compiled for
each hidden entry cost a file_write's first call ~10 ms), with the answer of ``paths_regex([entry]).match``."""

from __future__ import annotations

import itertools

from mcp_server_guard import globs, load_policy, protection_for

ENTRIES = [
    "/", "/a", "/a/", "/a/b", "/a//b", "//a", "/a.b", "/a[b]", "/a\nb", "/a+b", "/é/ß", "/A/B", "/a/b\n",
    "/a/*", "/a/?", "/a/**", "relative", "", "a/b",
]  # fmt: skip
PATHS = [
    "/", "//", "/\n", "/a", "/a/", "/a\n", "/a\n\n", "/a/b", "/a/bc", "/a/b/c", "/a/b\n", "/a/b/\n", "/ab", "/a//b",
    "/a.b", "/axb", "/a[b]", "/ab]", "/a\nb", "/a+b", "/aab", "/é/ß", "/É/ß", "/A/B", "/a/B", "a/b", "", "/a/b\nc",
]  # fmt: skip


def test_a_plain_entry_holds_exactly_the_paths_its_regex_matches() -> None:
    for entry, path in itertools.product(ENTRIES, PATHS):
        expected = globs.paths_regex([entry]).match(path) is not None
        assert globs._holds(entry, path) == expected, (entry, path)


def test_hidden_named_keeps_the_entries_that_hold_a_kept_path() -> None:
    named = globs.hidden_named(["/a/b", "/a/c", "/d/*"], ["/a/b/c", "/d/x"])
    assert named.pattern == globs.paths_regex(["/a/c"]).pattern
    protection = protection_for(load_policy(None))
    entries = [e for e, _ in protection._hidden_abs]
    home = protection.home or "/root"
    keep = ["/", "/root", home, home + "/work", "/tmp/x", *entries[:3]]
    expected = globs.paths_regex(e for e in entries if not any(globs.paths_regex([e]).match(k) for k in keep))
    assert globs.hidden_named(entries, keep).pattern == expected.pattern
