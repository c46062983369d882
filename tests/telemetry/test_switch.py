"""When runs are traced (nami_yaml/telemetry/switch.py), and what an untraced run costs: nothing of
OpenTelemetry imported. These need no otel extra: they are what happens without it too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nami_yaml.config.sections import TelemetrySettings
from nami_yaml.telemetry.switch import EXTRA_MISSING, NotTraced, Tracing, choose
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import run_nami, write

ROOT = Path(__file__).resolve().parents[2]


def settings(**values: object) -> TelemetrySettings:
    return TelemetrySettings.from_mapping(values)


def test_off_unless_a_collector_is_named() -> None:
    assert choose(settings(), {}) is None
    assert choose(settings(), {"OTEL_SERVICE_NAME": "x", "OTEL_RESOURCE_ATTRIBUTES": "a=b"}) is None


def test_the_standard_variables_switch_it_on() -> None:
    chosen = choose(settings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert chosen == Tracing("http://collector:4318/v1/traces", "nami", {}, False)
    traces = choose(settings(), {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom",
                                 "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318", "OTEL_SERVICE_NAME": "ops"})
    assert traces == Tracing("http://c:4318/custom", None, {}, False)  # OTEL_SERVICE_NAME names the service


def test_agent_yaml_switches_it_on_or_off() -> None:
    named = choose(settings(endpoint="http://collector:4318", content=True, resource_attributes={"team": "sre"}), {})
    assert named == Tracing("http://collector:4318/v1/traces", "nami", {"team": "sre"}, True)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert choose(settings(enabled=False), env) is None
    assert choose(settings(), {**env, "OTEL_SDK_DISABLED": "true"}) is None
    assert choose(settings(), {**env, "OTEL_TRACES_EXPORTER": "none"}) is None
    assert choose(settings(enabled=True), {}) == NotTraced(
        "runs are not traced: telemetry.enabled is true, but no collector is named (telemetry.endpoint, "
        "$OTEL_EXPORTER_OTLP_ENDPOINT or $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)")


@pytest.mark.parametrize("protocol", ["grpc", "http/json"])
def test_only_otlp_over_http_protobuf(protocol: str) -> None:
    chosen = choose(settings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": protocol})
    assert isinstance(chosen, NotTraced) and "set it to http/protobuf" in chosen.why
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
    assert isinstance(choose(settings(), both), Tracing)  # the traces' own variable wins


RUN = """
import sys
from nami_yaml import Agent
with Agent.from_config(sys.argv[1], base_url=sys.argv[2], assume_yes=True) as agent:
    assert agent.run("go").status == "answered"
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "nami_yaml.telemetry.spans")))
print("loaded:", loaded)
"""


def test_an_untraced_run_imports_nothing_of_opentelemetry(workdir: Path) -> None:
    config = write(workdir / "agent.yaml", "model: {provider: custom, name: m}\ntools: {builtin: [list_dir]}\n"
                                           "audit: {path: audit.jsonl}\n")
    with FakeOpenAIServer([tool_calls(call("list_dir", {})), text("done")]) as server:
        result = subprocess.run([sys.executable, "-c", RUN, str(config), server.base_url], cwd=workdir,
                                capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "loaded: []"


def test_switched_on_without_the_extra_says_how_to_get_it(workdir: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "opentelemetry"  # a package that fails to import, found first
    write(shadow / "__init__.py", "raise ImportError('hidden for this test')\n")
    write(workdir / "agent.yaml", "model: {provider: custom, name: m}\ntools: {builtin: [list_dir]}\n"
                                  "audit: {path: audit.jsonl}\n")
    env = {"PYTHONPATH": f"{shadow.parent}:{ROOT}", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    with FakeOpenAIServer([text("fine")]) as server:
        result = run_nami(server, "run", "--config", "agent.yaml", "go", cwd=workdir, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fine"
    assert EXTRA_MISSING in result.stderr and "pip install 'nami_yaml[otel]'" in result.stderr
    assert "Traceback" not in result.stderr
