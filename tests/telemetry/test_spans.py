"""Traced runs end to end: the real loop, driven by the fake OpenAI server through the real openai SDK, sends
its spans over OTLP/HTTP to a real receiver on 127.0.0.1, which decodes them with the official protobuf
definitions; a real tool process prints the TRACEPARENT it got."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.programs import need_otel

need_otel()

from nami_yaml import Agent  # noqa: E402
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls, usage  # noqa: E402
from tests.helpers import write  # noqa: E402
from tests.telemetry.receiver import otlp_receiver  # noqa: E402

AGENT_YAML = """\
model: {{provider: custom, name: fake-model}}
tools: {{builtin: [bash], files: [tools]}}
permissions: {{exec: deny}}
audit: {{path: audit.jsonl}}
telemetry: {{endpoint: "{endpoint}", service_name: ops-agent, resource_attributes: {{team: sre}}{more}}}
agents:
  helper:
    description: Looks at the trace.
    tools: [show_trace]
"""

SHOW_TRACE = """\
name: show_trace
description: Print the trace context this process got, and the collector credentials if it sees them.
risk: read
env_passthrough: [OTEL_EXPORTER_OTLP_HEADERS]  # asked for, never given: a collector's credentials
parameters: {type: object, properties: {note: {type: string}}, required: [note]}
command: [sh, -c, 'echo "tp=$TRACEPARENT headers=${{OTEL_EXPORTER_OTLP_HEADERS:-none}} note=$1"', sh, "{note}"]
"""

OK_CHAT = "chat fake-model"


def project(folder: Path, endpoint: str, more: str = "") -> Path:
    write(folder / "tools" / "show_trace.yaml", SHOW_TRACE)
    return write(folder / "agent.yaml", AGENT_YAML.format(endpoint=endpoint, more=more))


def run(config: Path, server: FakeOpenAIServer, task: str, env: dict[str, str] | None = None) -> Any:
    with Agent.from_config(config, base_url=server.base_url, assume_yes=True,
                           env={"PATH": "/usr/bin:/bin", **(env or {})}) as agent:
        return agent.run(task)


def test_a_run_is_one_trace_nested_by_the_genai_conventions(workdir: Path) -> None:
    with otlp_receiver() as receiver, FakeOpenAIServer() as server:
        config = project(workdir, receiver.url)
        server.add_task("[p]", tool_calls(call("show_trace", {"note": "first"}), usage=usage(120, 30, 100)),
                        tool_calls(call("agent__helper", {"task": "[c] look"})),
                        tool_calls(call("bash", {"command": "rm -rf /tmp/x"})), text("all done"))
        server.add_task("[c]", tool_calls(call("show_trace", {"note": "child"})), text("child done"))
        outcome = run(config, server, "[p] investigate",
                      {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer collector-secret-1"})
    assert outcome.status == "answered" and outcome.final_text == "all done"
    assert len({span.trace_id for span in receiver.spans}) == 1  # one trace, sub-agent included
    root = receiver.one("invoke_agent nami")
    assert root.parent_id == "" and root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["nami.run.status"] == "answered" and root.attributes["gen_ai.usage.input_tokens"] > 0
    assert root.resource["service.name"] == "ops-agent" and root.resource["team"] == "sre"
    parent_chats = [s for s in receiver.named(OK_CHAT) if s.parent_id == root.span_id]
    assert len(parent_chats) == 4 and all(s.kind == 3 for s in parent_chats)  # SPAN_KIND_CLIENT
    first = min(parent_chats, key=lambda s: s.attributes["nami.step"])
    assert first.attributes["gen_ai.usage.input_tokens"] == 120
    assert first.attributes["gen_ai.usage.output_tokens"] == 30
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert first.attributes["gen_ai.request.model"] == "fake-model"
    assert first.attributes["server.address"] == "127.0.0.1"
    last = max(parent_chats, key=lambda s: s.attributes["nami.step"])
    assert last.attributes["gen_ai.response.finish_reasons"] == ["stop"]

    shows = receiver.named("execute_tool show_trace")
    mine = next(s for s in shows if s.parent_id == root.span_id)
    assert mine.attributes["gen_ai.tool.name"] == "show_trace"
    assert mine.attributes["gen_ai.tool.call.id"].startswith("call_")
    assert mine.attributes["nami.decision"] == "allow" and mine.attributes["nami.tool.risk"] == "read"
    assert mine.attributes["process.exit.code"] == 0 and mine.attributes["nami.tool.ok"] is True
    assert isinstance(mine.attributes["nami.sandboxed"], bool)

    # The sub-agent's run nests under the parent's call that started it; its own call under it.
    spawn = receiver.one("execute_tool agent__helper")
    helper = receiver.one("invoke_agent helper")
    assert spawn.parent_id == root.span_id and helper.parent_id == spawn.span_id
    child_show = next(s for s in shows if s is not mine)
    assert child_show.parent_id == helper.span_id
    assert {s.parent_id for s in receiver.named(OK_CHAT)} == {root.span_id, helper.span_id}

    # The refusal is an event of the call's span, and its status says so.
    refused = receiver.one("execute_tool bash")
    assert refused.attributes["nami.decision"] == "deny" and refused.attributes["error.type"] == "denied"
    assert refused.events[0][0] == "nami.refusal" and refused.events[0][1]["nami.decision.source"] == "permissions.exec"
    assert refused.status == 2  # STATUS_CODE_ERROR

    # The processes' TRACEPARENT belongs to the trace: the span of the very call that started each one.
    results = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]
    printed = {line.split("note=")[1]: line for line in results if line.startswith("tp=")}
    for note, span in (("first", mine), ("child", child_show)):
        # (flags: sampled, and with a random trace id the SDK also sets W3C level 2's "random" bit)
        assert re.match(f"tp=00-{span.trace_id}-{span.span_id}-0[13] ", printed[note]), printed[note]
        assert "headers=none" in printed[note]  # the collector's credentials are not the tools'
    assert {h.get("authorization") for h in receiver.headers} == {"Bearer collector-secret-1"}
    assert set(receiver.paths) == {"/v1/traces"}
    # Each call's audit record hash goes out with its span, and the run's latest with the run's: a copy
    # kept by the collector anchors the audit chain (nami log --verify --anchor).
    records = {r["call_id"]: r["hash"] for r in map(json.loads, (workdir / "audit.jsonl").read_text().splitlines())}
    for span in (mine, child_show, spawn, refused):
        assert span.attributes["nami.audit.record"] == records[span.attributes["gen_ai.tool.call.id"]]
    assert root.attributes["nami.audit.head"] == refused.attributes["nami.audit.record"]
    # No text of the run unless content: true.
    assert not [key for s in receiver.spans for key in s.attributes
                if key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.output.messages")]


def test_content_is_sent_only_when_asked_and_redacted_as_in_the_audit_log(workdir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "s3cr3t-deploy-value")
    with otlp_receiver() as receiver, FakeOpenAIServer() as server:
        config = project(workdir, receiver.url, ", content: true")
        server.add_task("[p]", tool_calls(call("show_trace", {"note": "s3cr3t-deploy-value"})), text("the answer"))
        assert run(config, server, "[p] go").status == "answered"
    show = receiver.one("execute_tool show_trace")
    assert show.attributes["gen_ai.tool.call.arguments"] == '{"note": "[redacted]"}'
    assert "note=[redacted]" in show.attributes["gen_ai.tool.call.result"]
    answer = receiver.one("invoke_agent nami").attributes["gen_ai.output.messages"]
    assert "the answer" in answer and "s3cr3t" not in str([s.attributes for s in receiver.spans])


def test_a_run_started_inside_a_trace_joins_it(workdir: Path) -> None:
    outer = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with otlp_receiver() as receiver, FakeOpenAIServer() as server:
        config = project(workdir, receiver.url)
        server.add_task("[p]", text("ok"))
        run(config, server, "[p] go", {"TRACEPARENT": outer})
    root = receiver.one("invoke_agent nami")
    assert (root.trace_id, root.parent_id) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")


def test_a_failed_request_is_an_error_span(workdir: Path) -> None:
    from nami_yaml.testing import error

    with otlp_receiver() as receiver, FakeOpenAIServer() as server:
        config = project(workdir, receiver.url, ", enabled: true")
        write(config, config.read_text().replace("model: {", "model: {retries: 0, "))
        server.add_task("[p]", error(400, "the request is bad"))
        assert run(config, server, "[p] go").status == "error"
    chat = receiver.one(OK_CHAT)
    assert chat.status == 2 and chat.attributes["error.type"] == "model_error"
    root = receiver.one("invoke_agent nami")
    assert root.status == 2 and root.attributes["error.type"] == "error" and chat.parent_id == root.span_id


def test_an_mcp_http_server_gets_the_calls_trace_context(workdir: Path, tmp_path: Path) -> None:
    from tests.programs import need_mcp

    need_mcp()
    headers_file = tmp_path / "headers.txt"
    server_script = Path(__file__).with_name("mcp_http_server.py")
    process = subprocess.Popen([sys.executable, str(server_script), str(headers_file)], stdout=subprocess.PIPE,
                               text=True, cwd=tmp_path)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        with otlp_receiver() as receiver, FakeOpenAIServer() as server:
            config = project(workdir, receiver.url)
            write(config, config.read_text() + f"mcp_servers:\n  traced: {{url: '{url}'}}\n")
            server.add_task("[p]", tool_calls(call("traced__whoami", {})), text("done"))
            assert run(config, server, "[p] ask the server").status == "answered"
    finally:
        process.terminate()
        process.wait(timeout=15)
    span = receiver.one("execute_tool traced__whoami")
    answer = next(m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool")
    sent = json.loads(answer)["meta"]["traceparent"]
    assert re.match(f"00-{span.trace_id}-{span.span_id}-0[13]$", sent)
    recorded = headers_file.read_text().splitlines()
    assert sent in recorded  # the tools/call request's header too
    assert recorded.count(sent) == 1 and "-" in recorded  # and only that one: the handshake is not traced


def test_a_collector_that_is_down_is_said_once_and_the_run_goes_on(workdir: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with FakeOpenAIServer() as server:
        config = project(workdir, down)
        server.add_task("[p]", text("one"))
        server.add_task("[q]", text("two"))
        assert run(config, server, "[p] go").status == "answered"
        assert run(config, server, "[q] again").status == "answered"
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [f"nami: traces could not be sent to {down}/v1/traces (runs go on; see docs/telemetry.md)"]


def test_a_call_span_says_its_target_its_sandbox_and_who_approved_it(workdir: Path) -> None:
    from tests.helpers import KUBECTL_ON_TARGETS, Answering
    from tests.programs import need_bwrap

    need_bwrap()
    write(workdir / "tools" / "kubectl.yaml", KUBECTL_ON_TARGETS)
    config = write(workdir / "agent.yaml", "model: {provider: custom, name: fake-model}\n"
                   "targets:\n  prod: {vars: {context: prod-eu}}\ntools: {builtin: [bash], files: [tools]}\n"
                   "telemetry: {endpoint: \"ENDPOINT\"}\n")
    person = Answering(True)
    with otlp_receiver() as receiver, FakeOpenAIServer() as server:
        write(config, config.read_text().replace("ENDPOINT", receiver.url))
        server.add_task("[p]", tool_calls(call("kubectl_change", {"verb": "apply", "resource": "web",
                                                                  "target": "prod"}),
                                          call("bash", {"command": "echo \"tp=$TRACEPARENT\""})), text("done"))
        with Agent.from_config(config, base_url=server.base_url, approve=person) as agent:
            assert agent.run("[p] apply").status == "answered"
    change = receiver.one("execute_tool kubectl_change")
    assert change.attributes["nami.target"] == "prod" and change.attributes["nami.tool.risk"] == "exec"
    assert change.attributes["nami.sandboxed"] is True and change.attributes["nami.decision"] == "allow"
    assert [(name, attrs["nami.decision.source"]) for name, attrs in change.events] == [("nami.approval", "user")]
    bash = receiver.one("execute_tool bash")
    printed = next(m["content"] for m in server.requests[-1]["messages"]
                   if m["role"] == "tool" and m["content"].startswith("tp="))
    assert printed.strip() == f"tp=00-{bash.trace_id}-{bash.span_id}-0{printed.strip()[-1]}"
