# Data for test_rt107_f2_deep_repository_hooks_unprotected.py (a command's program, run in the box from the root).
# argv[1]: how many levels of the long name to go down; then it rewrites the repository's hook (the one its
# core.hooksPath names) in place, keeping its mode: a rewrite, no new executable.
import os
import sys

levels = int(sys.argv[1])
for _ in range(levels):
    os.chdir("d" * 250)
with open("tools/hooks/pre-commit", "r+") as fh:
    fh.truncate(0)
    fh.write("#!/bin/sh\necho ran-outside-the-box > hook-ran.txt\nexit 0\n")
print("rewritten", flush=True)
