"""Tools with a plan step over a stub CLI (``planner``, a real program on PATH): ``deploy`` plans into the
call's plan file and shows it (as terraform plan -out / show / apply PLANFILE), ``scale`` shows a diff and
writes no file (as kubectl diff / apply). Every start of the planner is logged in the workspace."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from tests.helpers import write

PLANNER = """#!{python}
import json, sys
with open("planner.log", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
command = sys.argv[1]
if command == "plan":
    size = int(sys.argv[2].split("=", 1)[1])
    if size < 0:
        sys.stderr.write("error: size must be positive, got %d\\n" % size)
        sys.exit(3)
    with open(sys.argv[3].split("=", 1)[1], "w") as plan:
        plan.write("create web (size %d)\\n" % size)
    print("planned")
elif command == "show":
    sys.stdout.write("PLAN: " + open(sys.argv[2]).read())
elif command == "diff":
    sys.stdout.write("+ replicas: %s\\n" % sys.argv[2])
    sys.exit(1)  # differences, as kubectl diff says them
elif command == "apply":
    open("applied.txt", "w").write(open(sys.argv[2]).read())
elif command == "set":
    open("applied.txt", "w").write("replicas %s\\n" % sys.argv[2])
elif command == "plan-zip":  # a zip, as terraform's plan file is: read by seeking to its end
    import zipfile
    with zipfile.ZipFile(sys.argv[2], "w") as plan:
        plan.writestr("tfplan", "create web (size %s)\\n" % sys.argv[3])
        plan.writestr("state", "x" * 100000)
elif command == "show-zip":
    import zipfile
    with zipfile.ZipFile(sys.argv[2]) as plan:
        print("PLAN: " + plan.read("tfplan").decode().strip() + " (" + " ".join(plan.namelist()) + ")")
elif command == "apply-zip":
    import zipfile
    with zipfile.ZipFile(sys.argv[2]) as plan:
        open("applied.txt", "w").write(plan.read("tfplan").decode())
elif command == "apply-late":  # says it started, waits for "go", then reads the plan: a writer races it
    import os, time
    open("started", "w").close()
    for _ in range(1200):
        if os.path.exists("go"):
            break
        time.sleep(0.05)
    open("applied.txt", "w").write(open(sys.argv[2]).read())
"""

DEPLOY = """\
name: deploy
description: Deploy web at a size.
risk: write
parameters: {type: object, properties: {size: {type: integer}}, required: [size]}
plan:
  command: [planner, plan, "--size={size}", "--out={plan_file}"]
  show: [planner, show, "{plan_file}"]
command: [planner, apply, "{plan_file}"]
"""

SCALE = """\
name: scale
description: Scale web.
risk: write
parameters: {type: object, properties: {replicas: {type: integer, minimum: 0}}, required: [replicas]}
plan: {command: [planner, diff, "{replicas}"], exit_codes: [0, 1]}
command: [planner, set, "{replicas}"]
"""


@pytest.fixture
def planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stub CLI, first on PATH (for this process and the nami processes it starts)."""
    folder = tmp_path / "plan-bin"
    folder.mkdir()
    program = folder / "planner"
    program.write_text(PLANNER.format(python=sys.executable))
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return program


def add_plan_tools(project: Path) -> None:
    write(project / "tools" / "deploy.yaml", DEPLOY)
    write(project / "tools" / "scale.yaml", SCALE)


def planner_log(project: Path) -> list[list[str]]:
    log = project / "planner.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
