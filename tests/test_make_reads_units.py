"""What a hook's ``make`` reads, as ``make_reads`` names it: make's text functions evaluated, the hook's own
variables and include directories taken, ``$@`` and shell loops in recipes read as make and the shell run them
(red team 124 F1's spellings, as a class)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.hook_runs import _make_arguments, run_by_hooks
from mcp_server_guard.make_reads import make_named, make_text


def _includes(text: str, goals: tuple[str, ...] = ("lint",)) -> list[str]:
    return [
        word for line in make_text(text, goals).splitlines() for word, how, _ in make_named(line) if how == "include"
    ]


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("-include $(patsubst %.c,%.d,$(SRCS))", ["src/a.d", "src/b.d"]),
        ("-include $(SRCS:%.c=%.d)", ["src/a.d", "src/b.d"]),
        ("-include $(addsuffix .conf,$(MODS))", ["local.conf", "site.conf"]),
        ("-include $(addprefix conf/,$(MODS))", ["conf/local", "conf/site"]),
        ("-include $(subst .c,.mk,$(SRCS))", ["src/a.mk", "src/b.mk"]),
        ("-include $(notdir $(SRCS))", ["a.c", "b.c"]),
        ("-include $(basename $(SRCS))", ["src/a", "src/b"]),
        ("-include $(filter %.c,$(SRCS) x.h)", ["src/a.c", "src/b.c"]),
        ("-include $(firstword $(MODS))", ["local", "site"]),  # (every word: a superset)
        ("-include $(addsuffix .mk,$(patsubst %.c,%,$(notdir $(SRCS))))", ["a.mk", "b.mk"]),
    ],
)
def test_an_include_named_through_makes_text_functions_is_named(given: str, named: list[str]) -> None:
    text = f"SRCS := src/a.c src/b.c\nMODS := local site\n{given}\nlint:\n\t@true\n"
    assert _includes(text) == named


def test_a_variable_the_hooks_command_line_sets_names_what_it_includes() -> None:
    text = "LOCAL ?= local.conf\n-include $(LOCAL)\nlint:\n\t@true\n"
    assert _includes(text, ("-s", "lint", "LOCAL=site.conf")) == ["local.conf", "site.conf"]
    assert _includes(text, ("-s", "lint")) == ["local.conf"]


@pytest.mark.parametrize("option", [("-I", "mk"), ("-Imk",), ("--include-dir=mk",), ("--include-dir", "mk")])
def test_an_include_found_through_an_include_directory_is_named_there(option: tuple[str, ...]) -> None:
    assert _includes("include common.mk\nlint:\n\t@true\n", (*option, "lint")) == ["common.mk", "mk/common.mk"]


def test_a_rules_target_is_its_recipes_dollar_at() -> None:
    text = "SUBDIRS := lib app\nlint: $(SUBDIRS)\n$(SUBDIRS):\n\t@$(MAKE) -C $@ lint\n"
    assert "make -C lib lint" in make_text(text, ("lint",))
    assert "make -C app lint" in make_text(text, ("lint",))
    assert "$$@" in make_text("lint:\n\techo $$@\n", ("lint",))  # (the shell's own $@ stays as it is)


def test_a_recipes_shell_loop_is_read_once_for_each_word() -> None:
    text = "SUBDIRS := lib app\nlint:\n\t@for d in $(SUBDIRS); do $(MAKE) -C $$d lint; done\n"
    read = make_text(text, ("lint",))
    assert "make -C lib lint" in read and "make -C app lint" in read


def test_the_make_words_of_a_hook_line_keep_options_and_variables() -> None:
    assert _make_arguments("make -s lint LOCAL=site.conf && echo ok", "make") == ("-s", "lint", "LOCAL=site.conf")
    assert _make_arguments("cd x; /usr/bin/make -I mk all; true", "make") == ("-I", "mk", "all")
    assert _make_arguments("echo 'unclosed", "make") == ()


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("-include $(foreach m,$(MODS),$(m).conf)", ["local.conf", "site.conf"]),
        ("-include $(call conf,local)", ["local.conf"]),
        ("-include $(if $(MODS),a.conf,b.conf)", ["a.conf", "b.conf"]),  # (both branches: a superset)
        ("-include $(subst $(comma),.,$(PAIR))", ["local.conf"]),  # (arguments split before they are expanded)
        ("-include $($(K)_CONF)", ["local.conf"]),
        ("-include ${MODS:%=%.mk}", ["local.mk", "site.mk"]),
    ],
)
def test_makes_own_functions_and_computed_names_are_expanded_as_make_expands_them(given: str, named: list[str]) -> None:
    values = (
        "MODS := local site\nconf = $(1).conf\ncomma := ,\nPAIR := local,conf\nK := LOCAL\nLOCAL_CONF := local.conf\n"
    )
    assert _includes(f"{values}{given}\nlint:\n\t@true\n") == named


def test_what_only_a_run_knows_is_left_as_written() -> None:
    assert "-include $(shell echo x.conf)" in make_text("-include $(shell echo x.conf)\nlint:\n\t@true\n", ("lint",))


def test_a_hook_line_with_options_and_no_goal_reads_the_default_goal() -> None:
    text = "all:\n\tsh scripts/lint\nother:\n\tsh scripts/other\n"
    for goals in [("-s",), ("-j4",), ("-j", "4"), ("-C", "docs"), ()]:
        assert "scripts/lint" in make_text(text, goals) and "scripts/other" not in make_text(text, goals), goals


def test_automatic_variables_recipe_prefix_target_variables_and_evaluated_defines_are_read() -> None:
    assert "make -f Makefile.ci" in make_text("lint: Makefile.ci\n\t$(MAKE) -f $< check\n", ("lint",))
    assert "make -f Makefile.a" in make_text("lint: check-a\ncheck-%:\n\t$(MAKE) -f Makefile.$* check\n", ("lint",))
    assert "make -C lib" in make_text("lint: SUB = lib\nlint:\n\t$(MAKE) -C $(SUB) check\n", ("lint",))
    assert "make -f Makefile.ci" in make_text(".RECIPEPREFIX = >\nlint:\n> $(MAKE) -f Makefile.ci\n", ("lint",))
    template = "define RULE\nlint:\n\t$$(MAKE) -f Makefile.ci check\nendef\n$(eval $(RULE))\n"
    assert "make -f Makefile.ci" in make_text(template, ("lint",))


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("\t@$(MAKE) -s -f Makefile.ci check", [("Makefile.ci", "recipes", ("check",))]),
        ("\t+$(MAKE) -sf Makefile.ci check", [("Makefile.ci", "recipes", ("check",))]),
        ("make -sC lib lint", [(f"lib/{n}", "recipes", ("lint",)) for n in ("GNUmakefile", "makefile", "Makefile")]),
        ("make -f A -f B x", [("A", "recipes", ("x",)), ("B", "recipes", ("x",))]),
        ("MAKEFILES=site.conf make -s lint", [("site.conf", "include", ())]),
        ("cmake --build . -f x", []),
    ],
)
def test_the_makefiles_a_line_runs_make_on_are_named(line: str, named: list[tuple[str, str, tuple[str, ...]]]) -> None:
    assert make_named(line) == named


def test_an_expansion_that_doubles_itself_stops_at_its_bound() -> None:
    # Threat: a makefile whose variables double at each level (2**40 characters), run through a wide foreach: the
    # judge (on the server, outside the box) must not hang or fill memory on it.
    text = "A0 := x\n" + "".join(f"A{i + 1} := $(A{i})$(A{i})\n" for i in range(40))
    text += "W := " + " ".join(["w"] * 300) + "\n-include $(foreach v,$(W),$(A40))\nlint:\n\t@true\n"
    assert len(make_text(text, ("lint",))) <= 2 << 20


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("CHECKS := a b\nlint: $(CHECKS)\n$(CHECKS): %: lint-%.sh\n\tsh $<\n", ["lint-a.sh", "lint-b.sh"]),
        ("vpath %.sh scripts\nlint: x.sh\n\tsh $<\n", ["scripts/x.sh"]),
        ("VPATH = tools\nlint: x.sh\n\tsh $^\n", ["tools/x.sh"]),
        ("lint: tools/run/x\n\tcd $(<D) && sh ./$(<F)\n", ["cd tools/run && sh ./x"]),
        (
            "T := py\ndefine RULE\nlint-$(1):\n\tsh scripts/$(1).sh\nendef\n"
            "$(foreach t,$(T),$(eval $(call RULE,$(t))))\nlint: $(addprefix lint-,$(T))\n",
            ["scripts/py.sh"],
        ),
        ("LOCAL := local.conf\n$(eval -include $(LOCAL))\nlint:\n\t@true\n", ["-include local.conf"]),
    ],
)
def test_static_pattern_rules_vpath_directory_parts_and_evaluated_templates_are_read(
    text: str, read: list[str]
) -> None:
    made = make_text(text, ("lint",))
    assert all(part in made for part in read), made


def test_a_hook_naming_a_binary_by_its_path_reads_no_word_of_it(tmp_path: Path) -> None:
    # Red team 132 F1: `/bin/sh scripts/lint.sh` in a hook read /bin/sh as shell; a word of it held a NUL and every
    # judgement of the repository failed ("embedded null byte").
    hooks = tmp_path / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\n/bin/sh scripts/lint.sh\n")
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF\x00\x00bin/x\x00make -f a\x00b\n")
    (hooks / "pre-push").write_text(f"#!/bin/sh\n{binary}\n")
    named = run_by_hooks([str(hooks)], str(tmp_path), None)
    assert f"%{tmp_path}/scripts/lint.sh" in named and not [n for n in named if "\x00" in n]


def test_nested_loops_stop_at_the_expanders_step_bound() -> None:
    # Red team 132: foreach inside foreach, 256 words each, four deep: 256**4 expansions unless bounded.
    text = "W := " + " ".join(f"w{i}" for i in range(256)) + "\n"
    text += "-include $(foreach a,$(W),$(foreach b,$(W),$(foreach c,$(W),$(foreach d,$(W),x))))\nlint:\n\t@true\n"
    started = time.monotonic()
    make_text(text, ("lint",))
    assert time.monotonic() - started < 5


def test_a_rule_named_by_a_function_is_read_for_each_target_it_names() -> None:
    # Red team 133 F1: `$(addprefix lint-,$(CHECKS)):` split at its inner blank matched no goal; its recipe unread.
    text = "CHECKS := py js\nlint: $(addprefix lint-,$(CHECKS))\n$(addprefix lint-,$(CHECKS)):\n\tsh run.sh $@\n"
    made = make_text(text, ("lint",))
    assert "sh run.sh lint-py" in made and "sh run.sh lint-js" in made


def test_names_of_many_variable_named_rules_leave_the_makefiles_includes_their_steps() -> None:
    # Red team 133's lead: rule names expanded for each goal used up the Expander's steps before the makefile's own
    # lines; `-include $(LOCAL)` was left as written and named nothing, so local.mk landed unasked.
    words = " ".join(f"w{i}" for i in range(250))
    rules = "".join(f"$(foreach w,$(W),r{i}-$(w)):\n\t@true\n" for i in range(100))
    text = f"W := {words}\nlint:\n\t@true\n" + rules + "LOCAL := local.mk\n-include $(LOCAL)\n"
    assert "-include local.mk" in make_text(text, ("lint",))
