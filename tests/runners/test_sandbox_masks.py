"""A program a rule denies by name alone is masked in the sandbox of the bash tool's calls, with the real
bwrap: whatever spells it (an interpreter's os.system, a computed name, a copy), it does not run."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins.shell import bash
from nami_yaml.runners.sandbox.masks import MULTI_CALL_NAMES, masked_files
from nami_yaml.runners.sandbox.plan import BASH_BUILTIN, builtin_plan
from nami_yaml.runtime import RuntimeContext
from tests.runners.test_sandbox import tools
from tests.sandboxing import need_bwrap

TIMEIT = ('python3 -m timeit -n1 -r1 -s "import os" "class X: __class_getitem__ = os.system\n'
          'X[\\"r\\"+\\"m -rf victim\\"]"')
OS_SYSTEM = "python3 -c \"import os; os.system('rm -rf victim')\""


@pytest.fixture
def victim(ctx: RuntimeContext) -> Path:
    need_bwrap()
    folder = ctx.workspace / "victim"
    folder.mkdir()
    (folder / "kept").write_text("x")
    return folder


def denying(ctx: RuntimeContext, *names: str) -> RuntimeContext:
    return replace(ctx, denied_programs=names)


@pytest.mark.parametrize("line", [OS_SYSTEM, TIMEIT, "cp \"$(command -v rm)\" ./myrm; ./myrm -rf victim",
                                  "x=r; ${x}m -rf victim", "/bin/rm -rf victim; /usr/bin/rm -rf victim"])
def test_a_program_denied_by_name_runs_by_no_spelling(ctx: RuntimeContext, victim: Path, line: str) -> None:
    bash(line, ctx=denying(ctx, "rm"))
    assert (victim / "kept").exists()


def test_without_the_deny_the_same_lines_delete(ctx: RuntimeContext, victim: Path) -> None:
    bash(TIMEIT, ctx=ctx)  # what the mask stops: the line itself works
    assert not victim.exists()


def test_the_mask_is_the_bash_tools_only(ctx: RuntimeContext, victim: Path) -> None:
    """A typed tool running rm is no call a bash command rule can match: it runs as declared."""
    executor = tools(ctx, "name: clean\ndescription: d\nrisk: write\ncommand: [rm, -rf, victim]\n")
    assert executor.execute("clean", {}).ok
    assert not victim.exists()


def test_the_shell_of_the_call_is_never_masked(ctx: RuntimeContext, victim: Path) -> None:
    result = bash("echo still runs", ctx=denying(ctx, "bash", "rm"))
    assert "still runs" in result.content


def test_a_plan_names_the_masked_files_and_other_programs_run(ctx: RuntimeContext, victim: Path) -> None:
    plan = builtin_plan(BASH_BUILTIN, denying(ctx, "rm"))
    assert plan is not None and Path(os.path.realpath(_which("rm"))) in plan.masked
    assert "kept" in bash("ls victim", ctx=denying(ctx, "rm")).content


def _which(name: str) -> str:
    import shutil

    found = shutil.which(name)
    assert found is not None
    return found


# -- which files are the program (no bwrap needed) ------------------------------------------------------

def test_links_and_hard_links_are_masked_where_they_lead(tmp_path: Path) -> None:
    bin_a, bin_b = tmp_path / "a", tmp_path / "b"
    bin_a.mkdir()
    bin_b.mkdir()
    (bin_a / "tidy-real").write_text("#!/bin/sh\n")
    (bin_b / "tidy").symlink_to(bin_a / "tidy-real")
    os.link(bin_a / "tidy-real", bin_a / "tidy-copy")
    found = masked_files(["tidy"], f"{bin_b}:{bin_a}")
    assert set(found) == {bin_a / "tidy-real", bin_a / "tidy-copy"}


def test_a_multi_call_binary_is_not_masked_for_one_of_its_names(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "multibox").write_text("#!/bin/sh\n")
    for name in ("tidy", *(f"applet{i}" for i in range(MULTI_CALL_NAMES))):
        (folder / name).symlink_to("multibox")
    assert masked_files(["tidy"], str(folder)) == ()
    assert masked_files(["multibox"], str(folder)) == (folder / "multibox",)  # denied by its own name


def test_a_deny_masks_nothing_where_the_program_is_not_installed(tmp_path: Path) -> None:
    assert masked_files([f"no-such-program-{os.getpid()}"], str(tmp_path)) == ()
