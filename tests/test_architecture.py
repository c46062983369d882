"""The directions of dependency in docs/contributing.md (and shared/architecture.md), checked on the import
statements: every import counts, at the top of a file, inside a function or under ``TYPE_CHECKING``."""

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
    "policy": ("nami_yaml.cli", "nami_yaml.runners", "nami_yaml.app", "click"),
    "config": ("nami_yaml.cli", "nami_yaml.runners", "nami_yaml.registry", "nami_yaml.app", "click"),
    "app": ("nami_yaml.cli", "click"),
    "doctor": ("nami_yaml.cli", "click", "openai"),
    "session": ("nami_yaml.cli", "nami_yaml.app", "click", "openai"),
    "model": ("nami_yaml.cli", "nami_yaml.agent", "click"),
    "mcp": ("nami_yaml.cli", "nami_yaml.serve", "nami_yaml.app", "click", "openai"),
    "serve": ("nami_yaml.cli", "click", "openai"),
    # reading a command line is heuristics only: it imports nothing of nami_yaml outside itself
    "shell": tuple(f"nami_yaml.{name}" for name in ("agent", "app", "batch", "builtins", "cli", "config", "doctor",
                                                    "mcp", "model", "policy", "project", "registry", "runners",
                                                    "runtime", "serve", "session", "spec")) + ("click", "openai"),
    "batch": ("nami_yaml.cli", "click", "openai"),
    "approvals": ("nami_yaml.cli", "nami_yaml.app", "click", "openai"),
    # a subscriber of the loop's events: it reads them and the settings, never the loop's or the CLI's insides
    "telemetry": ("nami_yaml.cli", "nami_yaml.app", "nami_yaml.runners", "nami_yaml.registry", "nami_yaml.agent.loop",
                  "nami_yaml.agent.tool_phase", "click", "openai"),
}
SDK = ("mcp", "mcp_types", "uvicorn")  # the mcp extra: only nami_yaml/mcp/ (client) and serve/ speak the protocol
SDK_PACKAGES = ("mcp", "serve")


LEAVES = ("errors", "result", "cancel", "display", "procfs", "xdg", "env_secrets", "version", "sensitive_paths",
          "project_request", "sandbox_settings", "setting_defaults", "git_index")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, by its full name (relative imports resolved); ``from a import b`` is
    module ``a.b`` when that is a module, else ``a``."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def imports(path: Path) -> set[str]:
    return {name for name in imported_modules(path) if name}


def import_graph() -> dict[str, set[str]]:
    """nami_yaml's files and the files each imports."""
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: {other for other in imports(path) if other in files and other != name}
            for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_files() -> None:
    assert cycles(import_graph()) == []


def package_of(module: str) -> str:
    """``nami_yaml.policy.rules`` -> ``policy``; a top-level module is its own: ``nami_yaml.runtime`` -> ``runtime``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "nami_yaml"


def package_graph() -> dict[str, set[str]]:
    """nami_yaml's packages (and top-level modules) and the ones each imports, from every file's imports."""
    graph: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        graph.setdefault(package_of(module), set())
        for other in imported:
            graph.setdefault(package_of(other), set())
            if package_of(other) != package_of(module):
                graph[package_of(module)].add(package_of(other))
    graph.pop("nami_yaml", None)  # the package root re-exports the API (lazily); it is above everything
    for imported in graph.values():
        imported.discard("nami_yaml")
    return graph


def test_no_import_cycle_between_packages() -> None:
    graph = package_graph()
    assert {"runtime", "policy", "registry", "runners", "shell", "serve", "mcp"} <= set(graph)  # it reads the tree
    assert cycles(graph) == []


def test_runtime_imports_only_the_leaves() -> None:
    """The per-call context is a narrow contract: nothing above the leaves, so every layer may hand it on."""
    leaves = {f"nami_yaml.{leaf}" for leaf in LEAVES}
    imported = {".".join(name.split(".")[:2]) for name in imports(PACKAGE / "runtime.py")}
    assert imported and {name for name in imported if name.startswith("nami_yaml")} <= leaves


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_are_read_however_they_are_written(tmp_path: Path) -> None:
    # The counting itself: relative, function-level and TYPE_CHECKING imports are all edges.
    graph = import_graph()
    assert "nami_yaml.app.agent" in graph["nami_yaml.app"]  # `from nami_yaml.app.agent import …` in __init__
    assert "nami_yaml.app" in graph["nami_yaml"]  # under TYPE_CHECKING in the package root


@pytest.mark.parametrize("leaf", LEAVES)
def test_leaf_modules_import_nothing_of_nami(leaf: str) -> None:
    assert {name for name in imports(PACKAGE / f"{leaf}.py") if name.startswith("nami_yaml")} == set()


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
        if path.relative_to(PACKAGE).parts[0] in SDK_PACKAGES:
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


def test_only_the_telemetry_package_imports_opentelemetry() -> None:
    """The otel extra is imported in one place, and there only by a traced run (tests/telemetry check that)."""
    bad = [f"{path.relative_to(PACKAGE.parent)} imports {name}" for path in sorted(PACKAGE.rglob("*.py"))
           if path.relative_to(PACKAGE).parts[0] != "telemetry"
           for name in imports(path) if name == "opentelemetry" or name.startswith("opentelemetry.")]
    assert bad == []
    assert not [name for name in imports(PACKAGE / "telemetry" / "switch.py") if name.startswith("opentelemetry")]


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


def _calls(path: Path, name: str) -> list[int]:
    """Lines of ``path`` that call ``name(…)`` (a plain name or an attribute)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if called == name:
                lines.append(node.lineno)
    return lines


def test_one_agent_builder() -> None:
    """Agents are made in one place (app/agent.py's build_agent); guards only in app/; the CLI, batch, mcp
    serve and the Python API reach them through it."""
    made = {str(path.relative_to(PACKAGE)): _calls(path, "Agent") for path in PACKAGE.rglob("*.py")}
    assert {path for path, lines in made.items() if lines} == {"app/agent.py"}
    guards = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if _calls(path, "Guards")}
    assert guards and all(path.startswith(("app/", "serve/")) for path in guards), guards
    for front_end in ("cli/run.py", "batch/task_run.py", "serve/serving.py"):
        assert _calls(PACKAGE / front_end, "build_agent") or _calls(PACKAGE / front_end, "library_build_agent") \
            or _calls(PACKAGE / front_end, "open_project"), front_end



def _defined(name: str) -> list[str]:
    return [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name]


def test_one_opener_one_request() -> None:
    """A project is opened by one function from one value: ``open_project(ProjectRequest)``; the openers
    and the shapes of "which project" that were beside it are gone, and every call in nami hands it a
    request (the keywords it also takes are the Python API's older spelling)."""
    assert _defined("open_project") == ["app/project.py"]
    assert _defined("ProjectRequest") == ["project_request.py"]
    for gone in ("read_settings", "open_project_for", "load_project", "open_batch_project", "ProjectRef"):
        assert _defined(gone) == [], gone
    loose = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = getattr(node, "func", None)
            name = getattr(called, "id", None) or getattr(called, "attr", None)
            if isinstance(node, ast.Call) and name in ("open_project", "load_settings"):
                first = node.args[0] if node.args else None
                spelled = isinstance(first, ast.Call) and getattr(first.func, "id", getattr(first.func, "attr", "")) \
                    in ("ProjectRequest", "request", "but")
                if not (spelled or isinstance(first, ast.Name) and first.id == "request"):
                    loose.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert loose == []


def test_sessions_take_plain_values() -> None:
    """The session writer subscribes to events; nothing in app/sessions.py knows the Agent."""
    assert not {name for name in imports(PACKAGE / "app" / "sessions.py") if name.startswith("nami_yaml.app")}
