"""A .pth import line runs whatever Python finds under that name on its path, not only what stands in its
site-packages (red team 86 F2): an installer's line whose module is not in the site-packages, or a module deleted
from it while a .pth still imports it, lets a .pth path line (``../../tools``, an editable install's ``src/``) put
the project's code in its place — run at every start of that Python, outside the box. Both are asked; an uninstall
that takes the line with its module is not."""

from __future__ import annotations

from pathlib import Path

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.protected import protection_for
from support.copies import Copy
from support.settling import POLICY, venv_site

PROTECTION = protection_for(POLICY)


def _environment(tmp_path: Path) -> tuple[Copy, Path]:
    """A project whose existing environment has virtualenv's start-up line and module, and an editable install's
    path line naming the project's ``src/``."""
    copy = Copy(tmp_path)
    site = venv_site(copy.root)
    (site / "_virtualenv.py").write_text("x = 1\n")
    (site / "_virtualenv.pth").write_text("import _virtualenv\n")
    (site / "__editable__.proj-0.1.pth").write_text(f"{copy.root / 'src'}\n")
    (copy.root / "src").mkdir()
    return copy, site


def _asks(copy: Copy, script: str) -> list[str]:
    changes = copy.run(script)
    return judge([changes], PROTECTION, POLICY.effects, [str(copy.root)]).asks


def test_attack_a_pth_imported_module_deleted_so_the_projects_code_stands_in_is_asked(tmp_path: Path) -> None:
    copy, site = _environment(tmp_path)
    asks = _asks(copy, f"rm {site}/_virtualenv.py && echo 'x = 2' > {copy.root}/src/_virtualenv.py")
    assert any("_virtualenv.py" in ask and "elsewhere on its path" in ask for ask in asks), asks


def test_attack_an_installers_line_for_a_module_found_through_a_path_line_is_asked(tmp_path: Path) -> None:
    copy, site = _environment(tmp_path)
    (site / "_virtualenv.py").unlink()
    (site / "_virtualenv.pth").unlink()
    asks = _asks(copy, f"echo 'x = 2' > {copy.root}/src/_virtualenv.py && echo 'import _virtualenv' > {site}/zz.pth")
    assert any("zz.pth" in ask and "start-up line" in ask for ask in asks), asks


def test_an_uninstall_taking_the_line_with_its_module_asks_nothing_of_python_start(tmp_path: Path) -> None:
    copy, site = _environment(tmp_path)
    asks = _asks(copy, f"rm {site}/_virtualenv.py {site}/_virtualenv.pth")
    assert not any("start" in ask or "elsewhere" in ask for ask in asks), asks


def test_an_installers_line_with_its_module_in_site_packages_stays_unasked(tmp_path: Path) -> None:
    copy, site = _environment(tmp_path)
    asks = _asks(copy, f"printf 'import _virtualenv\\n' > {site}/_virtualenv.pth")
    assert asks == [], asks


def test_attack_a_namespace_directory_in_site_packages_does_not_vouch_for_the_module(tmp_path: Path) -> None:
    # A directory without __init__ is a namespace portion: Python takes the module found later on its path first.
    copy, site = _environment(tmp_path)
    (site / "_virtualenv.py").unlink()
    (site / "_virtualenv.pth").unlink()
    script = (f"mkdir {site}/_virtualenv && echo 'x = 2' > {copy.root}/src/_virtualenv.py && "
              f"echo 'import _virtualenv' > {site}/zz.pth")  # fmt: skip
    asks = _asks(copy, script)
    assert any("zz.pth" in ask and "start-up line" in ask for ask in asks), asks


def test_attack_a_path_line_added_beside_a_line_whose_module_is_not_in_site_packages_is_asked(tmp_path: Path) -> None:
    copy, site = _environment(tmp_path)
    (site / "_virtualenv.py").unlink()  # (the line stays: it imported nothing until a path line gives it one)
    script = (f"echo 'x = 2' > {copy.root}/src/_virtualenv.py && "
              f"printf '{copy.root}/src\\nimport _virtualenv\\n' > {site}/_virtualenv.pth")  # fmt: skip
    asks = _asks(copy, script)
    assert any("_virtualenv.pth" in ask and "not in" in ask for ask in asks), asks
