"""``nami replay``'s engine (app/replay.py): a recorded session's user turns run again with another
scripted model; each call is served its recorded result and no tool process starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nami_yaml import Agent
from nami_yaml.app.options import AgentOptions
from nami_yaml.app.replay import NOT_RECORDED, WOULD_ASK, replay_session
from nami_yaml.testing import ScriptedModel, call, text, tool_calls

# Each run of a tool appends to the marker file: a replay must leave it as the recording left it.
TOOLS = """\
tools:
  - name: pods
    description: List the pods of a namespace.
    risk: read
    parameters:
      type: object
      properties:
        namespace: {type: string}
        limit: {type: integer, default: 10}
      required: [namespace]
    command: [PYTHON, -c, "import sys; open('MARKER', 'a').write(sys.argv[1] + chr(10)); print('pods of', sys.argv[1], 'run', len(open('MARKER').read().split()))", "{namespace}"]
  - name: restart
    description: Restart a deployment.
    risk: exec
    parameters:
      type: object
      properties:
        name: {type: string}
      required: [name]
    command: [PYTHON, -c, "import sys; open('MARKER', 'a').write('restart' + chr(10)); print('restarted', sys.argv[1])", "{name}"]
"""


@pytest.fixture
def recorded(workdir: Path) -> Path:
    """A session of two turns against real tools: pods of prod twice and of web, then a restart."""
    marker = workdir / "marker.txt"
    (workdir / "tools").mkdir()
    (workdir / "tools" / "ops.yaml").write_text(TOOLS.replace("PYTHON", sys.executable).replace("MARKER", str(marker)))
    (workdir / "agent.yaml").write_text("tools: {files: [tools/]}\npermissions: {exec: allow}\n")
    model = ScriptedModel([
        tool_calls(call("pods", {"namespace": "prod"})),
        tool_calls(call("pods", {"namespace": "web"})),
        tool_calls(call("pods", {"namespace": "prod"})),
        text("prod is crash-looping"),
        tool_calls(call("restart", {"name": "api"})),
        text("restarted api"),
    ])
    agent = Agent.from_config(client=model, trust=True, record_session=True)
    assert agent.run("why is prod down?").final_text == "prod is crash-looping"
    assert agent.run("restart it").final_text == "restarted api"
    path = agent.session_file
    agent.close()
    assert marker.read_text().split() == ["prod", "web", "prod", "restart"]
    assert path is not None
    return path


def replay(path: Path, model: ScriptedModel, **options: object):
    return replay_session(path, AgentOptions(client=model, trust=True, **options))  # type: ignore[arg-type]


def test_matching_calls_get_recorded_results_and_nothing_runs(recorded: Path, workdir: Path) -> None:
    before = (workdir / "marker.txt").read_text()
    other = ScriptedModel([
        tool_calls(call("pods", {"namespace": "prod", "limit": 10})),  # the default given: the same call
        tool_calls(call("pods", {"namespace": "prod"}), call("pods", {"namespace": "db"})),
        text("prod is crash-looping, db is fine"),
        tool_calls(call("restart", {"name": "api"})),
        text("restarted api"),
    ])
    report = replay(recorded, other)
    assert (workdir / "marker.txt").read_text() == before  # no tool process started
    first, second = report.turns
    served = [c for c in first.calls if c["outcome"] == "served"]
    # The same call made twice gets the two recorded results, in order.
    assert [c["result"] for c in served] == ["pods of prod run 1", "pods of prod run 3"]
    [new] = report.not_recorded
    assert (new["tool"], new["arguments"]["namespace"], new["outcome"]) == ("pods", "db", "not in the recording")
    assert new["result"] == NOT_RECORDED
    assert second.calls[0]["outcome"] == "served" and second.calls[0]["result"] == "restarted api"
    # The divergence: the second call was pods of prod (recorded: pods of web), the answers side by side.
    assert report.first_difference is not None and report.first_difference["index"] == 2
    assert report.first_difference["recorded"]["arguments"] == {"namespace": "web"}
    assert [u["arguments"] for u in report.unused] == [{"namespace": "web"}]
    assert (first.answer, first.recorded_answer) == ("prod is crash-looping, db is fine", "prod is crash-looping")
    assert report.diverged


def test_the_same_calls_do_not_diverge(recorded: Path) -> None:
    same = ScriptedModel([
        tool_calls(call("pods", {"namespace": "prod"})), tool_calls(call("pods", {"namespace": "web"})),
        tool_calls(call("pods", {"namespace": "prod"})), text("prod is crash-looping"),
        tool_calls(call("restart", {"name": "api"})), text("restarted api")])
    report = replay(recorded, same)
    assert report.first_difference is None and not report.not_recorded and not report.unused
    assert not report.diverged


def test_a_stricter_config_refuses_and_an_ask_is_not_served(recorded: Path, workdir: Path) -> None:
    before = (workdir / "marker.txt").read_text()
    (workdir / "strict.yaml").write_text(
        "tools: {files: [tools/]}\n"
        "rules:\n  - tool: pods\n    args: {namespace: web}\n    decision: deny\n    reason: not ours\n")
    same = ScriptedModel([
        tool_calls(call("pods", {"namespace": "prod"})), tool_calls(call("pods", {"namespace": "web"})),
        tool_calls(call("pods", {"namespace": "prod"})), text("prod is crash-looping"),
        tool_calls(call("restart", {"name": "api"})), text("restarted api")])
    report = replay(recorded, same, config=str(workdir / "strict.yaml"))
    outcomes = [(c["tool"], c["outcome"]) for turn in report.turns for c in turn.calls]
    assert outcomes == [("pods", "served"), ("pods", "denied"), ("pods", "served"), ("restart", "would ask")]
    denied = report.turns[0].calls[1]
    assert denied["detail"] == "not ours" and "strict.yaml" in denied["by"]
    assert report.turns[1].calls[0]["result"] == WOULD_ASK
    assert (workdir / "marker.txt").read_text() == before


def test_live_read_runs_only_read_tools_the_recording_lacks(recorded: Path, workdir: Path) -> None:
    model = ScriptedModel([tool_calls(call("pods", {"namespace": "db"}), call("restart", {"name": "db"})),
                           text("done"), text("ok")])
    report = replay_session(recorded, AgentOptions(client=model, trust=True), live="read")
    outcomes = {c["tool"]: c["outcome"] for c in report.turns[0].calls}
    assert outcomes == {"pods": "ran live", "restart": "not in the recording"}
    assert (workdir / "marker.txt").read_text().split()[-1] == "db"  # the read ran; the restart did not


LOGS = """\
name: logs
description: Print a long log.
risk: read
command: [PYTHON, -c, "import sys; print(chr(10).join('line %d' % i for i in range(3000))); print('warn', file=sys.stderr); sys.exit(1)"]
"""


def record_long_output(workdir: Path) -> tuple[Path, str]:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "logs.yaml").write_text(LOGS.replace("PYTHON", sys.executable))
    (workdir / "agent.yaml").write_text("tools: {files: [tools/]}\nlimits: {max_output: 2000}\n")
    model = ScriptedModel([tool_calls(call("logs", {})), text("seen")])
    with Agent.from_config(client=model, trust=True, record_session=True) as agent:
        agent.run("look")
        path = agent.session_file
    seen = model.requests[1]["messages"][-1]["content"]
    assert "full output: " in seen and "line 1500\n" not in seen  # cut when recorded
    assert path is not None
    return path, seen


def served(model: ScriptedModel) -> str:
    return model.requests[1]["messages"][-1]["content"]


def test_a_cut_result_is_served_from_its_whole_saved_output(workdir: Path) -> None:
    path, seen = record_long_output(workdir)
    (workdir / "wide.yaml").write_text("tools: {files: [tools/]}\nlimits: {max_output: 1000000}\n")
    model = ScriptedModel([tool_calls(call("logs", {})), text("seen")])
    report = replay(path, model, config=str(workdir / "wide.yaml"))
    whole = served(model)
    assert report.turns[0].calls[0]["outcome"] == "served"
    assert "omitted" not in whole and "line 1500\nline 1501\n" in whole  # the part the recording cut out
    assert whole.startswith("line 0\n") and whole.endswith("line 2999\n[stderr]\nwarn\n[exit code: 1]")
    # Under the recording's own limit, it is cut again, naming the same saved file.
    again = ScriptedModel([tool_calls(call("logs", {})), text("seen")])
    replay(path, again)
    marker = seen[seen.index("full output: "):].split("]")[0]
    assert marker in served(again) and len(served(again)) < 2600


def test_a_recording_pointing_at_another_file_is_served_as_recorded(workdir: Path) -> None:
    path, seen = record_long_output(workdir)
    saved = seen[seen.index("full output: ") + len("full output: "):].split("]")[0]
    copy = workdir / "copy.txt"  # the same bytes, outside nami's saved-output folder: never read
    copy.write_bytes(Path(saved).read_bytes())
    path.write_text(path.read_text().replace(saved, str(copy)))
    (workdir / "wide.yaml").write_text("tools: {files: [tools/]}\nlimits: {max_output: 1000000}\n")
    model = ScriptedModel([tool_calls(call("logs", {})), text("seen")])
    replay(path, model, config=str(workdir / "wide.yaml"))
    assert served(model) == seen.replace(saved, str(copy))
    Path(saved).write_text("something else\n")  # the saved file no longer holds what the recording shows
    path.write_text(path.read_text().replace(str(copy), saved))
    other = ScriptedModel([tool_calls(call("logs", {})), text("seen")])
    replay(path, other, config=str(workdir / "wide.yaml"))
    assert served(other) == seen
