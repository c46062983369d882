"""The directions of dependency in docs (and shared/architecture.md), checked on the import statements."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nami_yaml"

# package -> module prefixes it must never import
FORBIDDEN = {
    "agent": ("nami_yaml.cli", "nami_yaml.config", "nami_yaml.policy", "nami_yaml.registry", "nami_yaml.app",
              "nami_yaml.spec", "openai", "yaml", "click"),
    "registry": ("openai", "nami_yaml.agent", "nami_yaml.cli", "nami_yaml.app"),
    "runners": ("openai", "nami_yaml.agent", "nami_yaml.cli", "nami_yaml.app"),
    "builtins": ("openai", "nami_yaml.agent", "nami_yaml.cli", "nami_yaml.app"),
    "policy": ("nami_yaml.cli", "click"),
    "config": ("nami_yaml.cli", "click"),
    "app": ("nami_yaml.cli", "click"),
    "doctor": ("nami_yaml.cli", "click", "openai"),
    "session": ("nami_yaml.cli", "nami_yaml.app", "click", "openai"),
    "model": ("nami_yaml.cli", "nami_yaml.agent", "click"),
    "mcp": ("nami_yaml.cli", "click", "openai"),
    "batch": ("nami_yaml.cli", "click", "openai"),
}
SDK = ("mcp", "mcp_types", "uvicorn")  # the mcp extra: only nami_yaml/mcp/ speaks the protocol


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependency_directions(package: str) -> None:
    bad = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for name in imports(path):
            if any(name == p or name.startswith(p + ".") for p in FORBIDDEN[package]):
                bad.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert bad == []


def test_only_the_mcp_package_imports_the_sdk() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "mcp":
            continue
        bad += [f"{path.relative_to(PACKAGE.parent)} imports {name}" for name in imports(path)
                if any(name == p or name.startswith(p + ".") for p in SDK)]
    assert bad == []


@pytest.mark.parametrize("args", [["--help"], ["mcp", "--help"], ["tools", "list"], ["check"]])
def test_commands_without_mcp_do_not_import_the_sdk(args: list[str], tmp_path: Path) -> None:
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            f"try:\n    cli({args!r}, prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "assert not {'mcp', 'mcp_types'} & set(sys.modules), 'the mcp SDK was imported'\nprint('clean')")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().endswith("clean"), result.stderr


def test_path_helpers_have_a_neutral_home() -> None:
    for path in sorted((PACKAGE / "config").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "nami_yaml.registry.loader":
                assert not {a.name for a in node.names} & {"expand_tool_paths", "display_path"}, path


def test_only_the_cli_prints() -> None:
    printing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ("cli", "testing"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "input"):
                printing.append(f"{relative}:{node.lineno}")
    assert printing == []
