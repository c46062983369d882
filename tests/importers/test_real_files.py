"""The importers on the real files other projects ship on PyPI (the holmesgpt, shellmcp and mcp-this wheels,
downloaded without their dependencies, never committed here): HolmesGPT's toolsets load at 95% or more,
the others entirely, and every imported tool is inert to the payloads, called against stub CLIs.

Skipped, saying why, where PyPI cannot be reached; CI sets NAMI_REQUIRE_IMPORT_SOURCES=1 (.ci/run) to fail
instead."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from nami_yaml.importers.run import import_sources
from nami_yaml.registry.loader import load_tools
from nami_yaml.runtime import RuntimeContext
from tests.helpers import executor, write
from tests.importers.test_formats import arguments_for, argv_names, recorded
from tests.programs import need_import_extra

REQUIRED = "NAMI_REQUIRE_IMPORT_SOURCES"
WHEELS = {"holmesgpt": ("holmes", "holmes/plugins/toolsets/"), "shellmcp": ("shellmcp", "shellmcp/configs/"),
          "mcp-this": ("mcp-this", "mcp_this/configs/")}
PAYLOADS = ("$(touch PWNED)", "a'b\"c'; touch PWNED; echo '", "--output=/tmp/owned")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    need_import_extra()
    folder = tmp_path_factory.mktemp("wheels")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "0", "--timeout", "20",
                           "-q", "-d", str(folder), *WHEELS], capture_output=True, text=True, timeout=300)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != len(WHEELS):
        reason = f"the wheels could not be downloaded from PyPI: {done.stderr.strip()[-300:]}"
        if os.environ.get(REQUIRED) == "1":
            pytest.fail(f"{reason}: {REQUIRED}=1 requires them", pytrace=False)
        pytest.skip(reason)
    found: dict[str, list[Path]] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for kind, prefix in WHEELS.values():
                for name in archive.namelist():
                    if name.startswith(prefix) and name.endswith((".yaml", ".yml")):
                        found.setdefault(kind, []).append(Path(archive.extract(name, folder / "x")))
    return found


@pytest.mark.parametrize(("kind", "least"), [("holmes", 0.95), ("shellmcp", 1.0), ("mcp-this", 1.0)])
def test_real_files_load_and_are_inert(sources: dict[str, list[Path]], kind: str, least: float, ctx,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    out = ctx.workspace / "tools"
    outcomes, report = import_sources(kind, sources[kind], out)
    tools = [t for o in outcomes for t in o.tools]
    brought = [t for t in tools if not t.skipped]
    assert len(brought) >= least * len(tools) and len(tools) >= 10, report
    loaded, problems = load_tools(sorted(out.glob("*.yaml")))
    assert problems == [] and len(loaded) == len(brought)
    # Written in the short forms: shared keys once per file, most tools argv (pipelines, output filters), and
    # no longer than the source files.
    for outcome in outcomes:
        written = yaml.safe_load(outcome.out_file.read_text()) if outcome.written else {}
        if len(written.get("tools", [])) >= 3:
            assert "defaults" in written, outcome.out_file
    scripts = [t.name for t in brought if "script" in t.tool]
    if kind == "holmes":
        assert len(scripts) <= 0.15 * len(brought), scripts
        assert any("pipeline" in t.tool for t in brought) and any("output" in t.tool for t in brought)
        lines = sum(len(o.out_file.read_text().splitlines()) for o in outcomes if o.written)
        assert lines <= 1.3 * sum(len(Path(o.source).read_text().splitlines()) for o in outcomes)
    # Every program the tools name, stubbed: recording its argv, never running anything.
    stubs = ctx.workspace / "stubs"
    for tool in brought:
        stages = tool.tool.get("pipeline") or [tool.tool.get("command") or []]
        programs = [argv[0] for argv in stages if argv]
        programs += [word for line in tool.tool.get("script", "").splitlines() for word in line.split()[:1]]
        for program in {p for p in programs if isinstance(p, str) and p.isidentifier() or "-" in str(p)}:
            write(stubs / program, "#!/bin/sh\n{ printf '%s' \"${0##*/}\"; for a in \"$@\"; do printf '\\037%s' \"$a\"; "
                                   "done; printf '\\036'; } >> \"$STUB_LOG\"\n").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}{os.pathsep}{os.environ['PATH']}")
    log = ctx.workspace / "stub.log"
    monkeypatch.setenv("STUB_LOG", str(log))
    ctx = RuntimeContext(workspace=ctx.workspace, spill_dir=ctx.spill_dir)  # made after PATH holds the stubs
    run = executor(ctx, sorted(out.glob("*.yaml")))
    for tool in loaded:
        strings = [n for n, s in tool.parameters.get("properties", {}).items()
                   if s.get("type") == "string" and "enum" not in s and "pattern" not in s]
        for payload in PAYLOADS if strings else ():
            log.unlink(missing_ok=True)
            arguments = arguments_for(tool, payload)
            prepared = run.prepare(tool.name, arguments)
            result = prepared.run() if hasattr(prepared, "run") else prepared
            assert not (ctx.workspace / "PWNED").exists(), (tool.name, payload, result.content)
            seen = [arg for call in recorded(log) for arg in call[1:]]
            assert not any(arg.startswith("--output=/tmp/owned") for arg in seen), (tool.name, seen)
            in_argv = any(arguments.get(name) in (payload, [payload]) for name in argv_names(tool))
            if tool.runner.kind in ("command", "pipeline") and in_argv and not payload.startswith("-"):
                assert any(payload in arg for arg in seen), (tool.name, payload, seen, result.content)
