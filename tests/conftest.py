"""Shared fixtures: every test gets its own HOME, XDG folders and working directory; and how many xdist workers
`-n auto` starts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from nami_yaml.runtime import RuntimeContext

pytest_plugins = ["nami_yaml.testing.pytest_plugin"]

# The tests that start `nami` by name start this interpreter's: the README's test command
# (`.venv/bin/python -m pytest`) works in a shell that never activated the venv, and never runs another
# nami found first on the PATH. (What activating the venv does, for the tests' processes only.)
_BIN = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[:1] != [_BIN]:
    os.environ["PATH"] = os.pathsep.join([_BIN, *filter(None, os.environ.get("PATH", "").split(os.pathsep))])


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers `-n auto` (the project's addopts) starts: one more than the cores this process may
    use. Many tests spend seconds waiting (a wall time running out, a scripted server's delay, a child
    process starting), and the extra worker runs another file on the core that would sit idle meanwhile."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


@pytest.fixture(autouse=True)
def temp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    for name in ("NAMI_CONFIG", "NAMI_MODEL", "NAMI_BASE_URL", "NAMI_API_KEY", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL", "DEEPSEEK_API_KEY",
                 # a machine's own collector must not get the tests' spans, nor switch tracing on for them
                 "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                 "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "TRACEPARENT"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def ctx(workdir: Path, temp_home: Path) -> RuntimeContext:
    return RuntimeContext(workspace=workdir, spill_dir=temp_home / ".local" / "state" / "nami" / "output")
