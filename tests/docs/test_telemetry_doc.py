"""docs/telemetry.md's worked example: an investigation run for real (the fake server scripts the model, the
tools are real processes, a sub-agent looks at the database), its spans received over OTLP/HTTP and drawn
as a tree, which must be the tree the page shows."""

from __future__ import annotations

import re
from pathlib import Path

from tests.programs import need_otel

need_otel()

from nami_yaml import Agent  # noqa: E402
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls, usage  # noqa: E402
from tests.helpers import write  # noqa: E402
from tests.telemetry.receiver import ReceivedSpan, otlp_receiver  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "telemetry.md"
TREE = re.compile(r"<!-- tree -->\n```text\n(.*?)```", re.S)

AGENT_YAML = """\
model: {{provider: custom, name: ops-model}}
tools: {{builtin: [], files: [tools]}}
permissions: {{exec: ask}}
audit: {{path: audit.jsonl}}
telemetry: {{endpoint: "{endpoint}"}}
agents:
  db-expert:
    description: Reads the database's slow query log.
    tools: [slow_queries]
"""
TOOLS = """\
tools:
  - name: pod_status
    description: The checkout pods and their state.
    risk: read
    command: [echo, "checkout-7d9 Running 3 restarts"]
  - name: slow_queries
    description: The slowest queries of the last hour.
    risk: read
    command: [echo, "SELECT * FROM orders WHERE status = ? -- 4.2 s, no index"]
  - name: restart_pod
    description: Restart a pod.
    risk: exec
    parameters: {type: object, properties: {pod: {type: string}}, required: [pod]}
    command: [echo, restarted, "{pod}"]
"""


def tree(spans: list[ReceivedSpan]) -> str:
    """The spans as a tree: each one's name and what an operator reads first."""
    children: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    lines: list[str] = []

    def facts(span: ReceivedSpan) -> str:
        a = span.attributes
        if a["gen_ai.operation.name"] == "chat":
            return (f"{a['gen_ai.usage.input_tokens']} in, {a['gen_ai.usage.output_tokens']} out, "
                    f"finish {a['gen_ai.response.finish_reasons'][0]}")
        if a["gen_ai.operation.name"] == "execute_tool":
            by = a.get("nami.decision.source", "default")
            said = [f"{a['nami.tool.risk']}", f"{a['nami.decision']} by {by}"]
            said += [f"{name.split('.')[1]} by {attrs['nami.decision.source']}" for name, attrs in span.events]
            if "process.exit.code" in a:
                said.append(f"exit {a['process.exit.code']}")
            return ", ".join(said)
        return f"{a['nami.run.status']}, {a['gen_ai.usage.input_tokens']} in, {a['gen_ai.usage.output_tokens']} out"

    def draw(span: ReceivedSpan, prefix: str, last: bool, top: bool) -> None:
        head = "" if top else prefix + ("└─ " if last else "├─ ")
        lines.append(f"{head}{span.name:<{44 - len(head)}} {facts(span)}")
        below = sorted(children.get(span.span_id, []), key=lambda s: s.start)
        for index, child in enumerate(below):
            draw(child, "" if top else prefix + ("   " if last else "│  "), index == len(below) - 1, False)

    [root] = children[""]
    draw(root, "", True, True)
    return "\n".join(lines) + "\n"


def test_the_investigation_tree_is_what_a_run_sends(workdir: Path) -> None:
    write(workdir / "tools" / "ops.yaml", TOOLS)
    with otlp_receiver() as receiver, FakeOpenAIServer() as server:
        config = write(workdir / "agent.yaml", AGENT_YAML.format(endpoint=receiver.url))
        server.add_task("[why]",
                        tool_calls(call("pod_status"), usage=usage(1200, 40)),
                        tool_calls(call("agent__db-expert", {"task": "[db] why are checkout queries slow?"}),
                                   usage=usage(1300, 60, 1152)),
                        tool_calls(call("restart_pod", {"pod": "checkout-7d9"}), usage=usage(1450, 50, 1280)),
                        text("The orders query has no index; restarted checkout-7d9 meanwhile.",
                             usage=usage(1520, 30, 1408)))
        server.add_task("[db]", tool_calls(call("slow_queries"), usage=usage(400, 20)),
                        text("orders.status has no index (4.2 s per query).", usage=usage(480, 25, 384)))
        with Agent.from_config(config, base_url=server.base_url, assume_yes=True) as agent:
            assert agent.run("[why] why is checkout slow?").status == "answered"
    shown = TREE.search(DOC.read_text(encoding="utf-8"))
    assert shown, "docs/telemetry.md has no <!-- tree --> block"
    assert tree(receiver.spans) == shown.group(1)
