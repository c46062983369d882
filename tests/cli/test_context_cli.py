"""``nami context``: the system prompt and each tool definition, as sent, in characters and tokens."""

from __future__ import annotations

import json
import math
from pathlib import Path

from nami_yaml.app import open_project
from tests.helpers import run_nami


def test_context_counts_what_a_request_carries_largest_first(workdir: Path) -> None:
    (workdir / "big.yaml").write_text("name: big\ndescription: " + "A very long description. " * 80 + "\n"
                                      "risk: read\ncommand: [\"true\"]\n")
    result = run_nami(None, "context", "--json", "--tools", "big.yaml", cwd=workdir)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    parts = report["parts"]
    assert [p["chars"] for p in parts] == sorted((p["chars"] for p in parts), reverse=True)
    assert parts[0]["label"] == "tool big"

    project = open_project(cwd=workdir, extra_tools=["big.yaml"])
    definitions = {d["function"]["name"]: d for d in project.registry.definitions()}
    sent = {f"tool {name}": len(json.dumps(d, ensure_ascii=False, separators=(",", ":")))
            for name, d in definitions.items()}
    sent["system prompt"] = len(project.system_prompt())
    assert {p["label"]: p["chars"] for p in parts} == sent
    assert report["chars"] == sum(sent.values()) and report["tokens"] == math.ceil(report["chars"] / 4)
    assert all(p["tokens"] == math.ceil(p["chars"] / 4) for p in parts)
    # deepseek-chat's list price for that many uncached input tokens
    assert report["cost"] == report["tokens"] * 0.28 / 1e6

    table = run_nami(None, "context", "--tools", "big.yaml", cwd=workdir)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1].startswith("tool big") and lines[-2].split() == ["total", f"{report['chars']:,}", f"{report['tokens']:,}"]
    assert "per request uncached" in lines[-1] and "of the model's 128,000-token context window" in lines[-1]
    assert report["context_window"] == 128_000  # deepseek's preset


def test_context_at_a_local_server_assumes_no_window_and_no_price(workdir: Path) -> None:
    env = {"NAMI_BASE_URL": "http://127.0.0.1:8080/v1"}  # nothing is asked of it: nami context sends nothing
    report = json.loads(run_nami(None, "context", "--json", cwd=workdir, env=env).stdout)
    assert report["context_window"] is None and report["cost"] is None
    table = run_nami(None, "context", cwd=workdir, env=env)
    assert "the model's context window is not known" in table.stdout and "$" not in table.stdout

