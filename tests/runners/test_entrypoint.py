"""``entrypoint:`` tools: Python functions beside their YAML, imported on first call only."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runners.entrypoint import EntrypointRunner
from nami_yaml.runtime import RuntimeContext

MODULE = '''\
from dataclasses import replace
from pathlib import Path

from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult

Path(MARKER).write_text("imported")


def where(ctx, sub: str = "."):
    return str(ctx.workspace / sub)


def greet(name: str, punctuation: str = "!") -> str:
    return f"hello {name}{punctuation}"


def refuse(reason: str) -> str:
    raise ToolError(reason)


def crash() -> str:
    raise ValueError("bad input")


def as_dict(n: int) -> dict:
    return {"n": n, "squares": [i * i for i in range(n)]}


def nothing() -> None:
    return None


def custom() -> ToolResult:
    return ToolResult("partial", ok=False, details={"why": "test"})


def huge(size: int) -> str:
    return "".join(chr(97 + i % 26) for i in range(size))
'''

TOOLS = """\
tools:
  - name: where
    description: The workspace path of a folder.
    parameters: {type: object, properties: {sub: {type: string}}}
    entrypoint: MOD:where
  - name: greet
    description: Greet.
    parameters: {type: object, properties: {name: {type: string}}, required: [name]}
    entrypoint: MOD:greet
  - name: refuse
    description: Refuse.
    parameters: {type: object, properties: {reason: {type: string}}, required: [reason]}
    entrypoint: MOD:refuse
  - name: crash
    description: Crash.
    entrypoint: MOD:crash
  - name: as_dict
    description: A dict.
    parameters: {type: object, properties: {n: {type: integer}}, required: [n]}
    entrypoint: MOD:as_dict
  - name: nothing
    description: None.
    entrypoint: MOD:nothing
  - name: custom
    description: A ToolResult.
    entrypoint: MOD:custom
  - name: huge
    description: Long text.
    parameters: {type: object, properties: {size: {type: integer}}, required: [size]}
    max_output: 1000
    entrypoint: MOD:huge
  - name: missing_function
    description: Not there.
    entrypoint: MOD:not_defined
  - name: missing_module
    description: Not there.
    entrypoint: MOD_nowhere.sub:run
"""


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tool folders go on sys.path and modules into sys.modules; undo both after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.fixture
def setup(ctx: RuntimeContext, tmp_path: Path, isolated_imports: None) -> tuple[Executor, Path]:
    module = f"mytools_{uuid.uuid4().hex[:10]}"  # unique: sys.modules would otherwise serve an old copy
    marker = ctx.workspace / "import-marker"  # the entry point runs sandboxed: it writes the workspace only
    tools = tmp_path / "project" / "tools"
    tools.mkdir(parents=True)
    (tools / f"{module}.py").write_text(MODULE.replace("MARKER", repr(str(marker))), encoding="utf-8")
    (tools / "mytools.yaml").write_text(TOOLS.replace("MOD", module), encoding="utf-8")
    loaded, problems = load_tools([tools / "mytools.yaml"])
    assert problems == []
    return Executor(Registry(loaded), ctx), marker


def test_module_is_imported_on_first_call_not_at_load(setup: tuple[Executor, Path]) -> None:
    executor, marker = setup
    assert not marker.exists(), "loading tool files must not import their modules"
    prepared = executor.prepare("greet", {"name": "nami"})
    assert isinstance(prepared, PreparedToolCall)
    assert not marker.exists(), "preparing (e.g. for --dry-run or approval) must not import either"
    result = prepared.run()
    assert result.ok and result.content == "hello nami!"
    assert marker.read_text() == "imported"


def test_context_is_injected_when_asked_for(setup: tuple[Executor, Path], workdir: Path) -> None:
    executor, _ = setup
    assert executor.execute("where", {"sub": "src"}).content == str(workdir / "src")
    assert executor.execute("where", {}).content == str(workdir / ".")


def test_tool_error_is_a_clean_message(setup: tuple[Executor, Path]) -> None:
    executor, _ = setup
    result = executor.execute("refuse", {"reason": "branch main is protected"})
    assert not result.ok
    assert result.content == "Error: branch main is protected"


def test_other_exceptions_name_their_type(setup: tuple[Executor, Path]) -> None:
    executor, _ = setup
    result = executor.execute("crash", {})
    assert not result.ok
    assert result.content == "Error: ValueError: bad input"


def test_return_values(setup: tuple[Executor, Path]) -> None:
    executor, _ = setup
    as_dict = executor.execute("as_dict", {"n": 3})
    assert as_dict.ok and json.loads(as_dict.content) == {"n": 3, "squares": [0, 1, 4]}
    assert executor.execute("nothing", {}).content == "(no output)"
    custom = executor.execute("custom", {})
    assert (custom.content, custom.ok, custom.details) == ("partial", False, {"why": "test"})


def test_long_output_is_capped_and_spilled(setup: tuple[Executor, Path]) -> None:
    executor, _ = setup
    result = executor.execute("huge", {"size": 100_000})
    assert result.ok
    assert len(result.content) < 1300
    assert result.content.startswith("abcdefghij")
    assert "characters omitted" in result.content
    spill = Path(result.details["spill_path"])
    assert len(spill.read_text()) == 100_000
    short = executor.execute("huge", {"size": 999})
    assert len(short.content) == 999 and "spill_path" not in short.details


def test_import_and_lookup_failures_are_results(setup: tuple[Executor, Path]) -> None:
    executor, _ = setup
    missing_function = executor.execute("missing_function", {})
    assert not missing_function.ok
    assert missing_function.content.endswith("has no callable named not_defined")
    missing_module = executor.execute("missing_module", {})
    assert not missing_module.ok
    assert missing_module.content.startswith("Error: cannot import ")
    assert "ModuleNotFoundError" in missing_module.content



def test_tool_folder_cannot_shadow_the_standard_library(tmp_path: Path, ctx: RuntimeContext,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)  # so the tool's import really searches
    folder = tmp_path / "shadow"
    folder.mkdir()
    (folder / "colorsys.py").write_text("raise SystemExit('shadowed the standard library')\n")
    (folder / "shadow_tool.py").write_text(
        "import colorsys\n\ndef run() -> str:\n    return colorsys.__file__\n")
    (folder / "tool.yaml").write_text("name: shadow\ndescription: d\nentrypoint: shadow_tool:run\n")
    tools, problems = load_tools([folder / "tool.yaml"])
    assert problems == []
    result = Executor(Registry(tools), ctx).execute("shadow", "{}")
    assert result.ok, result.content
    assert not result.content.startswith(str(folder))


def test_a_stale_pyc_beside_the_source_is_never_run(tmp_path: Path, ctx: RuntimeContext,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Python would run tools/__pycache__/x.pyc when its recorded size and mtime match the source, even if
    its code is not the source's: code nobody reviewed. Tool modules are compiled from their source."""
    import os
    import py_compile

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    folder = tmp_path / "tools"
    folder.mkdir()
    source = folder / "stalemod.py"
    source.write_text("def run():\n    return 'compiled'\n")
    py_compile.compile(str(source), doraise=True)
    info = os.stat(source)
    source.write_text("def run():\n    return 'reviewed'\n")  # same size
    os.utime(source, ns=(info.st_atime_ns, info.st_mtime_ns))
    runner = EntrypointRunner("stalemod:run", base_dir=folder)
    assert runner.invocation("t", {}, ctx).run().content == "reviewed"
    assert sorted(p.name for p in (folder / "__pycache__").iterdir()) == [
        f"stalemod.{sys.implementation.cache_tag}.pyc"]  # only the one planted, nothing written


def test_only_calls_that_wait_on_their_process_may_run_on_the_loop_thread(setup: tuple[Executor, Path],
                                                                           ctx: RuntimeContext) -> None:
    """``stops_when_cancelled`` (the loop runs such a call alone on its own thread, where Ctrl-C cancels it):
    a tool file's entry point in its sandboxed child, and the bash built-in, only wait on a process the
    runner kills once cancelled. A function called inside nami (the sandbox off, or another built-in) may
    ignore the cancel switch: it stays on a worker thread the loop can abandon."""
    from nami_yaml.app.toolset import builtin_catalog

    executor, _ = setup
    in_child = executor.prepare("greet", {"name": "nami"})
    assert isinstance(in_child, PreparedToolCall) and in_child.sandbox_plan() is not None
    assert in_child.stops_when_cancelled
    off = replace(ctx, sandbox=replace(ctx.sandbox, mode="off"))
    inside = Executor(executor.registry, off).prepare("greet", {"name": "nami"})
    assert isinstance(inside, PreparedToolCall) and not inside.stops_when_cancelled

    catalog = builtin_catalog()
    files = [catalog["bash"], catalog["read_file"]]
    loaded, problems = load_tools(files, builtin=files)
    assert problems == []
    for context in (ctx, off):
        builtins = Executor(Registry(loaded), context)
        bash = builtins.prepare("bash", {"command": "true"})
        read = builtins.prepare("read_file", {"path": "x"})
        assert isinstance(bash, PreparedToolCall) and bash.stops_when_cancelled
        assert isinstance(read, PreparedToolCall) and not read.stops_when_cancelled


def test_a_functions_signature_is_read_once(setup: tuple[Executor, Path], ctx: RuntimeContext,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside nami (the sandbox off), whether a function takes ``ctx`` is read from its signature at its
    first call only (reading it was two fifths of calling a small tool); the context still reaches it at
    every call."""
    import inspect

    from nami_yaml.runners import entry_call

    executor = Executor(setup[0].registry, replace(ctx, sandbox=replace(ctx.sandbox, mode="off")))
    read: list[object] = []
    signature = inspect.signature
    monkeypatch.setattr(entry_call.inspect, "signature", lambda f: read.append(f) or signature(f))
    results = [executor.execute("where", {"sub": f"d{n}"}) for n in range(3)]
    assert [r.content for r in results] == [str(executor.ctx.workspace / f"d{n}") for n in range(3)]
    assert len(read) == 1
