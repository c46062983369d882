"""`nami doctor`'s sandbox line: which bubblewrap, or why it cannot work here and how to get it, judged
with the project's settings (a required sandbox that is missing fails)."""

from __future__ import annotations

import os
from pathlib import Path

from nami_yaml.doctor import FAIL, OK, WARN, run_doctor
from nami_yaml.doctor.sandbox import sandbox_check
from tests.programs import need_bwrap


def without_bwrap(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir(exist_ok=True)
    return {**os.environ, "PATH": str(folder)}


def test_where_bwrap_works_the_line_names_it(workdir: Path) -> None:
    need_bwrap()
    [check] = [c for c in run_doctor(cwd=workdir) if c.name == "sandbox"]
    assert check.status == OK and "bubblewrap" in check.message and "sandboxed" in check.message


def test_without_bwrap_it_says_why_and_how_to_get_it(tmp_path: Path) -> None:
    check = sandbox_check(None, without_bwrap(tmp_path))
    assert check.status == WARN and "bubblewrap (bwrap) is not installed" in check.message
    assert any("bubblewrap" in line for line in check.details)  # the install command
    required = sandbox_check({"mode": "required"}, without_bwrap(tmp_path))
    assert required.status == FAIL and "will not run" in required.message


def test_the_projects_mode_counts(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("sandbox: {mode: off}\n")
    [check] = [c for c in run_doctor(cwd=workdir) if c.name == "sandbox"]
    assert check.status == WARN and check.message.startswith("off (sandbox.mode: off)")
