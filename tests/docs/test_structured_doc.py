"""docs/structured.md: its Python example runs as a user's script against the fake server, and what it says
`nami context` prints for the library is what it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from nami_yaml.testing import FakeOpenAIServer, text
from tests.helpers import nami, write

DOC = Path(__file__).resolve().parents[2] / "docs" / "structured.md"


def test_the_python_example_prints_the_value(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    monkeypatch.setenv("NAMI_API_KEY", "test-key")
    with FakeOpenAIServer() as server:
        server.add(text("They look fine."), text('{"status": "degraded"}'))
        write(workdir / "agent.yaml", f"model: {{provider: custom, name: m, base_url: '{server.base_url}'}}\n")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, str(DOC), "exec"), {"__name__": "__main__"})
        assert len(server.requests) == 2  # the prose answer went back once
    assert printed.getvalue() == "degraded\n"


def test_the_context_figures_are_what_nami_context_prints(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], library: [kubectl/pods, docker/containers, terraform/show]}\n")
    assert nami("trust", "--yes").exit_code == 0
    result = nami("context")
    assert result.exit_code == 0, result.output
    shown = result.output.split("shaped tool output, a typical result (recorded) before and after:\n", 1)[1]
    assert shown.strip() in DOC.read_text(encoding="utf-8")
