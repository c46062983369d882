"""A file of several tools with shared parts: ``defaults:`` (a tool's own key wins) and ``$defs:`` named by
``$ref``; problems positioned where the shared part is written. The HolmesGPT kubernetes tools in nami's
form (holmes_kubernetes.yaml) load clean, as short as the original, and run with a stub kubectl."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.registry.loader import check_tools
from nami_yaml.runtime import RuntimeContext
from tests.helpers import executor, write

FIXTURE = Path(__file__).with_name("holmes_kubernetes.yaml")
HOLMES_LINES = 142  # the 14 kubectl tools of HolmesGPT's kubernetes toolsets, as issue 45 counted them


def problems_of(tmp_path: Path, text: str) -> list[str]:
    _, problems = check_tools([write(tmp_path / "tools.yaml", text)])
    return [f"{p.line}:{p.col}: {p.path}: {p.message}" for p in problems]


def test_the_holmes_tools_load_clean_and_as_short_as_the_original() -> None:
    tools, problems = check_tools([FIXTURE])
    assert problems == []
    assert len(tools) == 14
    assert len(FIXTURE.read_text(encoding="utf-8").splitlines()) <= 1.3 * HOLMES_LINES
    for tool in tools:  # declared once, under defaults:
        assert tool.risk == "read"
        assert tool.runner.options.sandbox.network is True and tool.runner.options.sandbox.reads == ("~/.kube",)
    by_name = {tool.name: tool for tool in tools}
    kind = by_name["kubectl_describe"].parameters["properties"]["kind"]
    assert kind["pattern"] == "^[A-Za-z0-9.-]+$" and "$ref" not in kind  # the $defs schema, written out
    assert by_name["kubernetes_jq_query"].runner.kind == "pipeline"
    assert by_name["kubectl_find_resource"].output.grep == "{keyword}"


def test_a_tools_own_key_wins_over_the_default(tmp_path: Path) -> None:
    text = ("defaults: {risk: read, timeout: 5, sandbox: {network: true}}\ntools:\n"
            "  - {name: a, description: d, command: [x]}\n"
            "  - {name: b, description: d, risk: write, sandbox: {reads: [/etc/hosts]}, command: [x]}\n")
    tools, problems = check_tools([write(tmp_path / "tools.yaml", text)])
    assert problems == []
    a, b = tools
    assert (a.risk, a.runner.options.timeout, a.runner.options.sandbox.network) == ("read", 5, True)
    assert (b.risk, b.runner.options.timeout, b.runner.options.sandbox.network) == ("write", 5, False)


def test_problems_in_shared_parts_are_positioned_where_they_are_written(tmp_path: Path) -> None:
    text = ("defaults:\n  timeout: -1\n  rsik: read\n  name: x\n$defs:\n  ns: {type: strin}\n"
            "tools:\n"
            "  - name: a\n    description: d\n"
            "    parameters: {type: object, properties: {n: {$ref: '#/$defs/ns'}, m: {$ref: '#/$defs/nope'}}}\n"
            "    command: [x, [\"{n}\"], [\"{m}\"]]\n")
    found = problems_of(tmp_path, text)
    assert "3:3: $.defaults.rsik: unknown key 'rsik' in defaults; did you mean 'risk'?" in found
    assert "4:3: $.defaults.name: `name` is each tool's own; it cannot be a default" in found
    assert any(line.startswith("2:12: $.tools[0].timeout: -1 is less than") for line in found), found
    assert any(line.startswith("6:14: $.tools[0].parameters.properties.n.type: not a valid JSON Schema") for line in found), found
    assert any(line.startswith("10:80: $.tools[0].parameters.properties.m['$ref']: #/$defs/nope names no schema")
               for line in found), found
    tools, _ = check_tools([tmp_path / "tools.yaml"])
    assert tools == []


KUBECTL = """#!{python}
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if "json" in args:
    print(json.dumps({{"items": [{{"metadata": {{"name": "web-1"}}}}, {{"metadata": {{"name": "db-0"}}}}]}}))
elif "wide" in args:
    print("NAMESPACE NAME READY\\nshop web-1 1/1\\nshop db-0 1/1\\nops web-2 0/1")
else:
    print("shop web-1 128Mi,1Gi\\nops idle <none>\\nshop db-0 500M")
"""


@pytest.fixture
def cluster(ctx: RuntimeContext, tmp_path: Path):
    log = ctx.workspace / "kubectl.log"  # where the sandboxed stub can write
    write(tmp_path / "bin" / "kubectl", KUBECTL.format(python=sys.executable, log=str(log))).chmod(0o755)
    path = f"{tmp_path / 'bin'}:{ctx.host_env.get('PATH', '/usr/bin:/bin')}"
    ctx = replace(ctx, host_env={**ctx.host_env, "PATH": path})
    return executor(ctx, [FIXTURE]), log, ctx


def test_the_jq_pipeline_replaces_the_script(cluster) -> None:
    tools, log, ctx = cluster
    result = tools.execute("kubernetes_jq_query", {"kind": "pods", "jq_expr": ".items[].metadata.name"})
    assert result.ok, result.content
    assert result.content.splitlines() == ["web-1", "db-0"]
    assert json.loads(log.read_text().splitlines()[-1]) == ["get", "pods", "--all-namespaces", "-o", "json"]


@pytest.mark.parametrize("program", ['"$(touch pwned)"', '"`touch pwned`"', "\"'; touch pwned; '\""])
def test_a_hostile_jq_program_is_only_jq_text(cluster, program: str) -> None:
    tools, _, ctx = cluster
    result = tools.execute("kubernetes_jq_query", {"kind": "pods", "jq_expr": f".items[] | {program}"})
    assert result.ok, result.content
    assert result.content.splitlines() == [json.loads(program)] * 2  # jq printed its string, twice
    assert not (ctx.workspace / "pwned").exists()


def test_a_dash_value_is_refused_before_kubectl_runs(cluster) -> None:
    tools, log, _ = cluster
    result = tools.execute("kubernetes_jq_query", {"kind": "pods", "jq_expr": "--rawfile=x"})
    assert not result.ok and "starts with '-'" in result.content
    assert not log.exists()


def test_the_grep_filter_replaces_the_pipe_to_grep(cluster) -> None:
    tools, _, _ = cluster
    result = tools.execute("kubectl_find_resource", {"kind": "pods", "keyword": "web"})
    assert result.ok, result.content
    assert [line for line in result.content.splitlines() if not line.startswith("[")] == [
        "shop web-1 1/1", "ops web-2 0/1"]


def test_the_memory_pipeline_sums_and_sorts(cluster) -> None:
    tools, log, _ = cluster
    result = tools.execute("kubectl_memory_requests_namespace", {"namespace": "shop"})
    assert result.ok, result.content
    assert result.content.splitlines() == ["shop web-1 1152.0 Mi", "shop db-0 476.8 Mi", "ops idle 0.0 Mi"]
    assert json.loads(log.read_text().splitlines()[-1])[:5] == ["get", "pods", "-n", "shop", "--no-headers"]
