"""nami's own Python in the workspace (the README's `.venv` in a clone nami runs in) stays read-only in the
sandbox: a `.pth` file a call writes into its site-packages would run at every later start of that Python,
nami's own outside any sandbox included. Real bwrap."""

from __future__ import annotations

import pathlib
import sys

import pytest

from nami_yaml.builtins.shell import bash
from nami_yaml.runtime import RuntimeContext
from tests.sandboxing import need_bwrap


def test_a_pth_file_cannot_be_planted_in_namis_own_virtual_environment(ctx: RuntimeContext,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    need_bwrap()
    venv = ctx.workspace / ".venv"
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(sys, "prefix", str(venv))  # nami runs from the workspace's .venv
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    relative = site.relative_to(ctx.workspace)
    result = bash(f"echo 'import os' > {relative}/zz.pth; echo x > .venv/pyvenv.cfg; echo ok > notes.txt", ctx=ctx)
    assert not (site / "zz.pth").exists(), result.content
    assert (venv / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    assert (ctx.workspace / "notes.txt").read_text() == "ok\n"  # the rest of the workspace is written as before
    assert "Read-only file system" in result.content


def test_a_virtual_environment_nami_does_not_run_from_stays_writable(ctx: RuntimeContext) -> None:
    need_bwrap()
    site = ctx.workspace / "other-venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    bash("echo 'import os' > other-venv/lib/site-packages/zz.pth", ctx=ctx)
    assert (site / "zz.pth").exists()  # the project's own: what the workspace is for (docs/security.md)


def test_nami_s_own_package_is_among_the_code_folders_a_sandbox_shows() -> None:
    """An editable install (a checkout, as CI's clone under /tmp) is on no import path, only named by a finder
    in site-packages: a sandboxed child running nami's Python found no nami_yaml under the private /tmp."""
    import nami_yaml
    from nami_yaml.runners.sandbox.plan import _code_folders

    package = pathlib.Path(nami_yaml.__file__).resolve().parent
    assert package in _code_folders("/usr/bin", ())
