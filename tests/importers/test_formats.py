"""nami import holmes | shellmcp | mcp-this | llm-functions on files written here in each format: every tool
brought loads under `nami check --strict`, the report says what became what, and every imported tool is
inert to command substitution, quotes inside quotes and dash payloads, checked by calling it against stub
CLIs that record the argv they receive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nami_yaml.registry.argv_checks import command_refs
from nami_yaml.registry.loader import load_tools
from tests.helpers import executor, nami, write
from tests.importers import fixtures
from tests.programs import need_import_extra

SEPARATOR, END = "\x1f", "\x1e"
STUBS = ("kubectl", "aws", "jq", "grep", "git", "docker", "curl", "helm")
PAYLOADS = ("$(touch PWNED)", "`touch PWNED`", "a'b\"c'; touch PWNED; echo '", "x\"; touch PWNED; \"",
            "--output=/tmp/owned", "-rf")


@pytest.fixture
def stubs(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stub CLIs first on PATH, each appending its name and arguments to stub.log in the workspace."""
    folder = workdir / "stubs"
    for name in STUBS:
        write(folder / name, "#!/bin/sh\n{ printf '%s' \"${0##*/}\"; for a in \"$@\"; do printf '\\037%s' \"$a\"; done; "
                             "printf '\\036'; } >> \"$STUB_LOG\"\n").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STUB_LOG", str(workdir / "stub.log"))
    return workdir / "stub.log"


def recorded(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [entry.split(SEPARATOR) for entry in log.read_text().split(END) if entry]


def imported(kind: str, source: Path, out: Path) -> str:
    result = nami("import", kind, str(source), "--out", str(out))
    assert result.exit_code == 0, result.output
    check = nami("check", "--strict", str(out))
    assert check.exit_code == 0, check.output
    return result.output


def import_fixture(ctx, kind: str, file: str, text: str) -> tuple[dict[str, Any], str]:
    """The fixture written to src/FILE and imported into tools/: its tools by name as written (``defaults:``
    given to each, ``$ref`` left as written), and the report."""
    source = write(ctx.workspace / "src" / file, text)
    report = imported(kind, source, ctx.workspace / "tools")
    written = yaml.safe_load((ctx.workspace / "tools" / f"{Path(file).stem}.yaml").read_text())
    defaults = written.get("defaults", {})
    return {tool["name"]: {**defaults, **tool} for tool in written["tools"]}, report


def written_file(ctx, file: str) -> dict[str, Any]:
    return yaml.safe_load((ctx.workspace / "tools" / file).read_text())


def argv_names(tool: Any) -> set[str]:
    """The parameters a loaded tool's argv (command or pipeline stages) or script names: a value only an
    output filter reads never reaches a program."""
    runner = tool.runner
    if runner.kind == "script":
        return set(tool.parameters.get("properties", {}))
    stages = runner.stages if runner.kind == "pipeline" else [runner.argv]
    return {name for stage in stages for name in command_refs(stage)}


def arguments_for(tool: Any, payload: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    schema = tool.parameters.get("properties", {})
    for name, spec in schema.items():
        if "enum" in spec:
            arguments[name] = spec["enum"][0]
        elif spec.get("type") == "boolean":
            arguments[name] = True
        elif spec.get("type") == "array":
            arguments[name] = [payload]
        elif spec.get("type") in ("integer", "number"):
            arguments[name] = 1
        elif "pattern" in spec:
            arguments[name] = "web-1"
        else:
            arguments[name] = payload
    return arguments


def assert_inert(ctx, out: Path, log: Path) -> int:
    """Call every imported tool with every payload in every string parameter; returns the calls made."""
    tools, problems = load_tools(sorted(out.glob("*.yaml")))
    assert problems == [] and tools
    run = executor(ctx, sorted(out.glob("*.yaml")))
    calls = 0
    for tool in tools:
        for payload in PAYLOADS:
            arguments = arguments_for(tool, payload)
            if payload not in json.dumps(arguments, ensure_ascii=False) and payload not in arguments.values():
                continue
            log.unlink(missing_ok=True)
            prepared = run.prepare(tool.name, arguments)
            result = prepared if not hasattr(prepared, "run") else prepared.run()
            calls += 1
            assert not (ctx.workspace / "PWNED").exists(), (tool.name, payload, result.content)
            seen = [arg for call in recorded(log) for arg in call[1:]]
            if not any(arguments.get(name) in (payload, [payload]) for name in argv_names(tool)):
                # Only an output filter reads it (in nami's process): no program ever receives it.
                assert result.ok and not any(payload in arg for arg in seen), (tool.name, payload, seen)
                continue
            if payload.startswith("-"):
                # Never an option: refused where it would start an argument, else inside one (key=value).
                assert not any(arg.startswith(payload) for arg in seen), (tool.name, seen)
                refused = not result.ok and "starts with '-'" in result.content
                assert refused or any(payload in arg for arg in seen), (tool.name, seen, result.content)
            else:
                assert any(payload in arg for arg in seen), (tool.name, payload, seen, result.content)
    return calls


def test_holmes_toolsets_import_load_and_are_inert(stubs: Path, ctx) -> None:
    need_import_extra()
    by_name, report = import_fixture(ctx, "holmes", "kubernetes.yaml", fixtures.HOLMES)
    out = ctx.workspace / "tools"
    assert set(by_name) == {"kubectl_describe", "kubectl_find_resource", "kubectl_services", "kubectl_jq_query",
                            "aws_cloudtrail_event_details", "kubectl_logs_limited", "kubectl_pod_names"}
    # A plain command with an optional part is argv with an optional group; {% else %} a negated group.
    assert by_name["kubectl_describe"]["command"] == ["kubectl", "describe", "{kind}", "{name}", ["-n", "{namespace}"]]
    assert by_name["kubectl_describe"]["parameters"]["required"] == ["kind", "name"]
    assert by_name["kubectl_services"]["command"] == ["kubectl", "get", "services", ["-n", "{namespace}"],
                                                      ["-A", "{!namespace}"], "-o", "wide"]
    # A pipe only into grep/head is an output filter; into jq, a pipeline of argvs; only what needs more, a script.
    assert by_name["kubectl_find_resource"]["command"] == ["kubectl", "get", "-A", "--show-labels", "-o", "wide",
                                                           "{kind}"]
    assert by_name["kubectl_find_resource"]["output"] == {"grep": "{keyword}"}
    pods = by_name["kubectl_pod_names"]
    assert pods["pipeline"] == [["kubectl", "get", "pods", "-A", "-o", "json"], ["jq", "-r", ".items[].metadata.name"]]
    assert pods["output"] == {"grep": "{pattern}", "head": "{lines}"}
    assert pods["parameters"]["properties"]["lines"] == {"type": "integer", "default": 20}
    assert "jq -c -r ''\"${jq_expr}\"''" in by_name["kubectl_jq_query"]["script"]
    assert by_name["kubectl_logs_limited"]["command"][:2] == ["kubectl", "logs"]
    assert by_name["kubectl_logs_limited"]["timeout"] == 30
    assert by_name["aws_cloudtrail_event_details"]["command"][4] == "AttributeKey=EventId,AttributeValue={EVENT_ID}"
    # Risks and sandbox needs guessed from the program and verb, declared once in defaults: where shared.
    written = written_file(ctx, "kubernetes.yaml")
    assert written["defaults"] == {"risk": "read", "sandbox": {"network": True, "reads": ["~/.kube"]}}
    assert [t["name"] for t in written["tools"] if "risk" in t or "sandbox" in t] == ["aws_cloudtrail_event_details"]
    assert by_name["aws_cloudtrail_event_details"]["sandbox"]["reads"] == ["~/.aws"]
    assert by_name["aws_cloudtrail_event_details"]["risk"] == "exec"
    # The report: what could not be brought and what to do instead, untyped values, other languages' strings.
    assert "kubectl_logs_all: not imported**: the template uses {% for %}" in report
    assert "transformer 'llm_summarize' (an LLM summarizing the output); instead" in report
    assert "parameter 'keyword' is untyped in the source" in report
    assert "value of 'jq_expr' lands inside a jq program" in report
    assert "value of 'EVENT_ID' lands inside" not in report  # not another language: an argument's part
    assert "parameter 'jq_expr' renamed" not in report and "'llm_instructions' not brought" in report
    assert "argv: kubectl get services [-n {namespace}] [-A {!namespace}] -o wide" in report
    assert "output filter grep: {keyword} replaces the stage `| grep {keyword}`" in report
    assert "pipeline (no shell): kubectl get pods -A -o json | jq -r .items[].metadata.name" in report
    assert "`timeout 30` became timeout: 30" in report
    assert 'defaults: declared once for the 7 tools (risk: "read", sandbox: {"network": true' in report
    assert assert_inert(ctx, out, stubs) >= 20


def test_shellmcp_imports_load_and_are_inert(stubs: Path, ctx) -> None:
    need_import_extra()
    by_name, report = import_fixture(ctx, "shellmcp", "repo.yml", fixtures.SHELLMCP)
    out = ctx.workspace / "tools"
    assert by_name["ListFiles"]["command"] == ["git", "ls-files", "{path}"]
    # The shared argument both tools name (ref: path_arg) is written once, in $defs:.
    written = written_file(ctx, "repo.yaml")
    assert written["$defs"] == {"path": {"type": "string", "description": "A folder of the repository", "default": "."}}
    assert by_name["ListFiles"]["parameters"]["properties"]["path"] == {"$ref": "#/$defs/path"}
    assert by_name["SearchCode"]["parameters"]["properties"]["path"] == {"$ref": "#/$defs/path"}
    assert written["defaults"] == {"risk": "read"} and "$defs: path: parameter schemas several tools share" in report
    # A name nami's built-in tools have is renamed; a redirection into a file makes the script a write.
    assert by_name["read_file_2"]["risk"] == "write" and "renamed from 'read_file', a name a built-in tool has" in report
    assert "risk write: the script redirects output into a file (>)" in report
    assert by_name["SearchCode"]["command"] == ["grep", "-rn", "{pattern}", "{path}"]
    assert by_name["ContainerLogs"]["command"] == ["docker", "logs", ["--tail", "50", "{tail}"], "{container}"]
    assert by_name["ContainerLogs"]["parameters"]["properties"]["container"]["pattern"] == "^[a-zA-Z0-9_.-]+$"
    assert "risk read: git ls-files: a read verb" in report and "risk read: docker logs: a read verb" in report
    assert assert_inert(ctx, out, stubs) >= 8


def test_mcp_this_imports_load_and_are_inert(stubs: Path, ctx) -> None:
    by_name, report = import_fixture(ctx, "mcp-this", "tools.yaml", fixtures.MCP_THIS)
    out = ctx.workspace / "tools"
    assert by_name["curl"]["command"] == ["curl", "{arguments}"]
    assert by_name["curl"]["sandbox"] == {"network": True}
    assert by_name["file-history"]["command"] == ["git", "log", "--oneline", "-n", "5", "--", "{path}"]
    assert by_name["count-files"]["pipeline"] == [["git", "ls-files"], ["wc", "-l"]]
    assert "parameter 'arguments' stood unquoted, so the shell split it" in report
    assert assert_inert(ctx, out, stubs) >= 6


def test_llm_functions_import_load_and_are_inert(stubs: Path, ctx) -> None:
    write(ctx.workspace / "src" / "tools" / "get_pods.sh", fixtures.LLM_FUNCTIONS_PODS)
    write(ctx.workspace / "src" / "tools" / "helm_status.sh", fixtures.LLM_FUNCTIONS_HELM)
    out = ctx.workspace / "tools"
    report = imported("llm-functions", ctx.workspace / "src", out)
    pods = yaml.safe_load((out / "get_pods.yaml").read_text())
    assert pods["parameters"]["required"] == ["namespace"]
    assert pods["parameters"]["properties"]["wide"] == {"type": "boolean", "default": False, "description": "Wide output."}
    assert 'argc_namespace="${namespace-}"' in pods["script"] and "argc --argc-eval" not in pods["script"]
    helm = yaml.safe_load((out / "helm_status.yaml").read_text())
    assert helm["parameters"]["properties"]["output"]["enum"] == ["table", "json", "yaml"]
    assert helm["risk"] == "read" and pods["sandbox"]["network"] is True
    assert "parameter 'selector' is untyped" in report
    assert assert_inert(ctx, out, stubs) >= 8
    run = executor(ctx, [out / "get_pods.yaml"])
    stubs.unlink(missing_ok=True)
    assert run.prepare("get_pods", {"namespace": "prod", "wide": True}).run().ok
    assert recorded(stubs) == [["kubectl", "get", "pods", "-n", "prod", "-o", "wide"]]


def test_an_existing_file_is_never_replaced_without_force(ctx) -> None:
    source = write(ctx.workspace / "src" / "tools.yaml", fixtures.MCP_THIS)
    out = ctx.workspace / "tools"
    write(out / "tools.yaml", "# mine\n")
    refused = nami("import", "mcp-this", str(source), "--out", str(out))
    assert refused.exit_code == 1 and "already exists; nothing was written (--force replaces)" in refused.output
    assert (out / "tools.yaml").read_text() == "# mine\n"
    forced = nami("import", "mcp-this", str(source), "--out", str(out), "--force")
    assert forced.exit_code == 0 and "curl" in (out / "tools.yaml").read_text()
    assert [p.name for p in out.iterdir()] == ["tools.yaml"]  # no temporary file left behind


def test_the_default_folder_is_agent_yamls_first_tool_folder(ctx) -> None:
    write(ctx.workspace / "agent.yaml", "tools:\n  files: [ops/tools/*.yaml]\n")
    source = write(ctx.workspace / "src" / "tools.yaml", fixtures.MCP_THIS)
    assert nami("import", "mcp-this", str(source)).exit_code == 0
    assert (ctx.workspace / "ops" / "tools" / "tools.yaml").is_file()


def test_a_file_of_another_format_is_a_clear_error(ctx) -> None:
    source = write(ctx.workspace / "src" / "x.yaml", fixtures.SHELLMCP)
    result = nami("import", "holmes", str(source))
    assert result.exit_code == 1
    assert "no 'toolsets:' mapping, so not a HolmesGPT toolset file" in result.output
    assert not (ctx.workspace / "tools").exists()


def test_without_jinja_the_jinja_formats_say_what_to_install(workdir: Path) -> None:
    """The import extra absent (Jinja unimportable): a clear message, exit 2, nothing written."""
    write(workdir / "k.yaml", fixtures.HOLMES)
    code = ("import sys; sys.modules['jinja2'] = None\n"
            "from nami_yaml.cli.main import main; sys.argv = ['nami', 'import', 'holmes', 'k.yaml']; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "install 'nami_yaml[import]'" in done.stderr and "Traceback" not in done.stderr
    assert not (workdir / "tools").exists()
