"""A project whose agent talks to the fake server, task files written from Python, and `nami batch run`
invoked as a user would (each task in its own worker process, talking to the server over HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from nami_yaml.batch.results import read_results
from nami_yaml.cli.main import cli
from nami_yaml.testing import FakeOpenAIServer


@dataclass
class BatchProject:
    folder: Path
    server: FakeOpenAIServer

    @property
    def config(self) -> Path:
        return self.folder / "agent.yaml"

    def tasks(self, tasks: list[dict[str, Any]], name: str = "tasks.yaml") -> Path:
        path = self.folder / name
        if name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
        else:
            path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False), encoding="utf-8")
        return path

    def run(self, *args: str) -> tuple[Result, list[dict[str, Any]]]:
        """``nami batch run`` with this project's agent.yaml; the result and the results file's lines. The
        task file is trusted (--yes): its trust question is tested on its own (test_task_trust.py)."""
        output = self.folder / "results.jsonl"
        if "-o" in args:
            output = Path(args[args.index("-o") + 1])
        else:
            args = (*args, "-o", str(output))
        result = CliRunner().invoke(cli, ["batch", "run", "--yes", "--config", str(self.config), *args])
        return result, read_results(output) if output.exists() else []


@pytest.fixture
def batch_project(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BatchProject]:
    monkeypatch.setenv("NAMI_API_KEY", "test-key")
    with FakeOpenAIServer() as server:
        (workdir / "agent.yaml").write_text(
            f"model: {{provider: custom, name: fake-model, base_url: '{server.base_url}'}}\n", encoding="utf-8")
        yield BatchProject(workdir, server)


def comparable(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What must be the same whatever ran the tasks (not durations, session ids or workspace paths)."""
    return {r["id"]: (r["status"], r["passed"], r["answer"], r["steps"], r["error"],
                      [(c["check"], c["passed"], c["reason"]) for c in r["checks"]]) for r in rows}
