"""``nami replay``: a session recorded by `nami run` against real tools, replayed as a real process with
another scripted model: nothing runs, the divergence is shown, --json for machines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.app.test_replay import TOOLS
from tests.helpers import run_nami


def test_replay_shows_served_calls_a_new_call_and_the_divergence(fake_openai: FakeOpenAIServer,
                                                                  workdir: Path) -> None:
    marker = workdir / "marker.txt"
    (workdir / "tools").mkdir()
    (workdir / "tools" / "ops.yaml").write_text(TOOLS.replace("PYTHON", sys.executable).replace("MARKER", str(marker)))
    (workdir / "agent.yaml").write_text("tools: {files: [tools/]}\n")
    fake_openai.add(tool_calls(call("pods", {"namespace": "prod"})), tool_calls(call("pods", {"namespace": "web"})),
                    text("prod is down"))
    recorded = run_nami(fake_openai, "run", "--config", "agent.yaml", "why is prod down?", cwd=workdir)
    assert recorded.returncode == 0, recorded.stderr
    [session] = json.loads(run_nami(None, "sessions", "--json", cwd=workdir).stdout)
    assert marker.read_text().split() == ["prod", "web"]

    fake_openai.add(tool_calls(call("pods", {"namespace": "prod"})), tool_calls(call("pods", {"namespace": "db"})),
                    text("prod is down; db too"))
    shown = run_nami(fake_openai, "replay", "--config", "agent.yaml", session["id"], cwd=workdir)
    assert shown.returncode == 0, shown.stderr
    assert marker.read_text().split() == ["prod", "web"]  # no tool process started
    lines = shown.stdout.splitlines()
    assert lines[0] == f"replay of session {session['id']}"
    assert lines[1] == "── turn 1: why is prod down?"
    assert lines[2].startswith("  served ") and 'pods namespace="prod"' in lines[2] and "→ pods of prod run 1" in lines[2]
    assert lines[3].startswith("  not in the recording  pods namespace=\"db\"")
    assert lines[4:9] == ["  answer, recorded:", "  │ prod is down", "  answer, now:", "  │ prod is down; db too",
                          'diverged at call 2: recorded pods namespace="web"; now pods namespace="db" limit=10 '
                          "(not in the recording)"]
    assert "calls not in the recording: 1" in lines and "recorded calls not made again: 1" in lines

    fake_openai.add(tool_calls(call("pods", {"namespace": "prod"})), text("prod is down"))
    report = json.loads(run_nami(fake_openai, "replay", "--json", "--config", "agent.yaml", session["id"],
                                 cwd=workdir).stdout)
    assert report["diverged"] and report["first_difference"]["index"] == 2
    assert report["first_difference"]["replayed"] is None
    assert report["turns"][0]["answer"] == report["turns"][0]["recorded_answer"] == "prod is down"
