"""docs/batch.md's Python example runs as a user's script would, against the fake server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from nami_yaml.testing import FakeOpenAIServer, text

DOC = Path(__file__).resolve().parents[2] / "docs" / "batch.md"


def test_the_python_example_runs_a_batch(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    monkeypatch.setenv("NAMI_API_KEY", "test-key")
    with FakeOpenAIServer(tasks={"[one]": [text("yes")], "[two]": [text("no")]}) as server:
        (workdir / "agent.yaml").write_text(f"model: {{provider: custom, name: m, base_url: '{server.base_url}'}}\n")
        (workdir / "tasks.yaml").write_text("tasks:\n  - {id: one, prompt: '[one] go', checks: [answer_matches: 'yes']}\n"
                                            "  - {id: two, prompt: '[two] go', checks: [answer_matches: 'yes']}\n")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, str(DOC), "exec"), {"__name__": "__main__"})
    assert printed.getvalue() == "1/2 passed\n"
    assert len((workdir / "results.jsonl").read_text().splitlines()) == 2
