"""Red team 76 (issue 42, fe4f5e9): the HOME class rule covers ``~/.config/**`` and configuration dotfiles at HOME's
top; the protected list names Python and Node installs in HOME (``.pyenv/versions/**``, ``.local/share/uv/python/**``,
``miniconda3/**``), ``.cargo/bin/**`` and ``.gradle/init.d/**``. Programs the user runs by name from other dot-dirs
are in neither, so a command may rewrite them in an allowed HOME, unasked, and they run at the user's next use,
outside the box:

- ``~/.rustup/toolchains/<toolchain>/bin/cargo``: ``~/.cargo/bin/cargo`` (protected) is rustup's proxy, which execs
  this file at every ``cargo build``;
- ``~/.gradle/wrapper/dists/<dist>/<hash>/gradle-<v>/init.d/*.gradle``: a Gradle distribution's own init scripts,
  applied by every ``./gradlew`` build of every project using that version (the list protects ``~/.gradle/init.d``);
- ``~/.local/share/jupyter/kernels/python3/kernel.json``: Jupyter's user data dir on Linux (``.jupyter/**`` is
  protected, this is not); its ``argv`` is the program started when a notebook opens the default kernel (the user's
  spec shadows the system one);
- ``~/.local/share/pipx/venvs/<tool>/...``: what ``~/.local/bin/<tool>`` (protected, a link) runs;
- ``~/.nvm/versions/node/<v>/lib/node_modules/npm/bin/npm-cli.js``: what every ``npm`` of an nvm user runs.

Payload-free: asks the one rule every writer uses. Passes when each is protected where HOME is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.home_rule import home_write_rule

RUN_LATER = [
    ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo",
    ".gradle/wrapper/dists/gradle-8.5-bin/5t9huq95ubn472n8rpzujfbqh/gradle-8.5/init.d/x.gradle",
    ".local/share/jupyter/kernels/python3/kernel.json",
    ".local/share/pipx/venvs/black/lib/python3.11/site-packages/black/__init__.py",
    ".nvm/versions/node/v20.11.0/lib/node_modules/npm/bin/npm-cli.js",
]


@pytest.mark.parametrize("path", RUN_LATER)
def test_programs_the_user_runs_from_other_dot_dirs_are_protected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    assert home_write_rule(tmp_path, monkeypatch, path) is not None, path
