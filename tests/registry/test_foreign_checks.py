"""Other tools' spellings pasted into a tool file (registry/foreign_checks.py), and braces an escape turned
into something else: each an error with the spelling to write, while real uses of doubled braces stay
valid; and a script is told which secret-looking variables nami kept from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.registry.loader import load_tools
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor, write

HEAD = "name: t\ndescription: d.\nrisk: read\n"
KIND = "parameters: {type: object, properties: {kind: {type: string}}, required: [kind]}\n"


def problems(workdir: Path, text: str) -> list[str]:
    _, found = load_tools([write(workdir / "tools" / "t.yaml", HEAD + text)])
    return [str(p) for p in found if p.is_error]


@pytest.mark.parametrize(("command", "said"), [
    ('[docker, ps, --format, "{{.Names}}"]', "the program gets {.Names}: {{ is nami's escape for one brace, so a "
                                             "Go template (docker, kubectl, helm) is written with four: {{{{.Names}}}}"),
    ('[docker, inspect, -f, "{{json .Config}}", x]', "the program gets {json .Config}"),
    ('[kubectl, get, pods, -o, "go-template={{range .items}}{{.metadata.name}}{{end}}"]', "the program gets {range"),
    ('[curl, -w, "%{http_code}", "https://example.org"]',
     "placeholder {http_code} names no parameter (declared: none); or, for the program to get {http_code} "
     "itself, write {{http_code}} (braces are escaped by doubling)"),
])
def test_an_escape_that_plainly_meant_another_template_is_an_error(workdir: Path, command: str, said: str) -> None:
    found = problems(workdir, f"command: {command}\n")
    assert any(said in problem for problem in found), found


@pytest.mark.parametrize("command", ['[awk, "{{print $1}}", f]', '[awk, "{{printf \\"%s\\", $1}}", f]',
                                     '[jq, "{{name: .metadata.name}}"]', '[jq, -n, "{{}}"]',
                                     '[kubectl, get, nodes, -o, "jsonpath={{range .items[*]}}{{.metadata.name}}{{end}}"]'])
def test_doubled_braces_for_a_literal_brace_stay_valid(workdir: Path, command: str) -> None:
    assert problems(workdir, f"command: {command}\n") == []


def test_jinja_and_mcp_this_placeholders_name_nami_s(workdir: Path) -> None:
    jinja = problems(workdir, KIND + 'command: [kubectl, get, "{{ kind }}"]\n')
    assert any("{{ kind }} is Jinja's placeholder, and here it passes the text '{ kind }': nami's is {kind}" in p
               for p in jinja)
    mcp_this = problems(workdir, KIND + 'command: [kubectl, get, "<<kind>>"]\n')
    assert any("<<kind>> is mcp-this's placeholder; nami's is {kind}" in p for p in mcp_this)


def test_llm_functions_argc_variables_and_foreign_keys(workdir: Path) -> None:
    required = problems(workdir, KIND + 'script: kubectl get "$argc_kind"\n')
    assert any("$argc_kind is llm-functions' variable; nami passes the parameter kind as $kind" in p
               for p in required)
    keys = problems(workdir, "cmd: ls\ncommand: [ls]\n")
    assert any("shellmcp's cmd: is nami's command:" in p for p in keys)
    holmes = problems(workdir, "toolsets: {}\ncommand: [ls]\n")
    assert any("nami import holmes FILE" in p for p in holmes)


def test_a_script_is_told_which_secret_variables_it_did_not_get(ctx: RuntimeContext,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_API_TOKEN", "s3cr3t-value-123")
    ctx = RuntimeContext(workspace=ctx.workspace)  # the host environment as it is now
    executor = tool_executor(ctx, HEAD + 'script: echo "token=${DEPLOY_API_TOKEN:-} home=$HOME"\n')
    result = executor.execute("t", {})
    assert result.content.startswith("token= home=")
    assert "[nami did not pass $DEPLOY_API_TOKEN to the script: it looks like a secret (a tool file's " \
           "env_passthrough: [DEPLOY_API_TOKEN] passes it)]" in result.content
    assert result.details["env_withheld"] == ["DEPLOY_API_TOKEN"]


def test_a_script_that_sets_its_argc_variables_itself_is_not_told(workdir: Path) -> None:
    """What `nami import llm-functions` writes: the script sets argc_x from $x, then reads $argc_x."""
    assert problems(workdir, KIND + 'script: |\n  argc_kind="${kind-}"\n  kubectl get "$argc_kind"\n') == []
