"""Does git work (and run a core.hooksPath hook) in a repository whose top is past PATH_MAX? (a side check of F2;
run by hand: python3 check_git_deep.py). Everything happens in a fresh temporary directory; the hook is harmless."""

import os
import subprocess
import tempfile

base = tempfile.mkdtemp(prefix="rt107-deep-")
os.chdir(base)
for _ in range(17):
    os.mkdir("d" * 250)
    os.chdir("d" * 250)
env = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": base,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], env=env, capture_output=True, text=True, timeout=60)


print(git("init", "-q"))
print(git("config", "core.hooksPath", "tools/hooks"))
os.makedirs("tools/hooks")
with open("tools/hooks/pre-commit", "w") as fh:
    fh.write("#!/bin/sh\necho hook-ran > hook-ran.txt\n")
os.chmod("tools/hooks/pre-commit", 0o755)
with open("a.txt", "w") as fh:
    fh.write("a\n")
print(git("add", "a.txt"))
print(git("commit", "-q", "-m", "x"))
print("hook ran:", os.path.exists("hook-ran.txt"))
os.chdir(base)
subprocess.run(["rm", "-rf", "--", base], timeout=60)
