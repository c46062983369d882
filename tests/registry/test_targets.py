"""Tools that run on a target: the ``target`` parameter the loader adds (an enum of the project's targets,
optional with a default, absent when pinned), what the loader refuses and warns about, and what reaches the
process: the target's env, its vars as argv elements and as ``$NAMI_TARGET_*`` in a script."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import check_tools, load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext, Target, TargetSet
from tests.helpers import write

TARGETS = TargetSet((Target("dev", {"APP_ENV": "development"}, {"context": "dev-eu", "namespace": "shop-dev"}),
                     Target("prod", {"APP_ENV": "production"}, {"context": "prod-eu"})))

SHOW = """\
name: show
description: Print where it runs.
risk: read
target: true
parameters:
  type: object
  properties:
    word: {type: string}
  required: [word]
command: [printf, "%s|", "{word}", "--context={target.context}", ["-n", "{target.namespace}"]]
"""


def problems(folder: Path, text: str, targets: TargetSet = TARGETS) -> list[str]:
    _, found = check_tools([write(folder / "tools" / "t.yaml", text)], targets=targets)
    return [f"{p.path}: {'warning: ' if not p.is_error else ''}{p.message}" for p in found]


def executor(ctx: RuntimeContext, text: str, targets: TargetSet = TARGETS) -> Executor:
    tools, found = load_tools([write(ctx.workspace.parent / "tools" / "t.yaml", text)], targets=targets)
    assert found == [], found
    return Executor(Registry(tools), ctx)


def run(ctx: RuntimeContext, text: str, arguments: dict, targets: TargetSet = TARGETS) -> ToolResult:
    return executor(ctx, text, targets).execute("show", json.dumps(arguments))


def test_the_model_sees_the_target_names_as_an_enum_it_must_choose_from(ctx: RuntimeContext) -> None:
    schema = executor(ctx, SHOW).definitions()[0]["function"]["parameters"]
    assert schema["properties"]["target"]["enum"] == ["dev", "prod"]
    assert schema["required"] == ["word", "target"]
    assert schema["additionalProperties"] is False


def test_with_a_default_target_the_parameter_is_optional_and_says_so(ctx: RuntimeContext) -> None:
    targets = replace(TARGETS, default="dev")
    schema = executor(ctx, SHOW, targets).definitions()[0]["function"]["parameters"]
    assert schema["required"] == ["word"]
    assert schema["properties"]["target"]["default"] == "dev"
    assert "default: dev" in schema["properties"]["target"]["description"]
    prepared = executor(ctx, SHOW, targets).prepare("show", {"word": "x"})
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.arguments["target"] == "dev" and prepared.target == "dev"


def test_vars_fill_argv_elements_and_a_group_is_left_out_where_the_target_lacks_its_var(ctx: RuntimeContext) -> None:
    dev = run(ctx, SHOW, {"word": "a b; $(x)", "target": "dev"})
    assert dev.ok, dev.content
    assert dev.content == "a b; $(x)|--context=dev-eu|-n|shop-dev|"
    prod = run(ctx, SHOW, {"word": "w", "target": "prod"})
    assert prod.content == "w|--context=prod-eu|"


def test_the_targets_env_and_the_target_variables_reach_the_process(ctx: RuntimeContext) -> None:
    text = "name: show\ndescription: d\nrisk: read\ntarget: true\ncommand: [env]\n"
    result = run(ctx, text, {"target": "prod"})
    lines = set(result.content.splitlines())
    assert {"APP_ENV=production", "NAMI_TARGET=prod", "NAMI_TARGET_CONTEXT=prod-eu"} <= lines
    assert not any(line.startswith("NAMI_TARGET_NAMESPACE=") for line in lines)


def test_a_script_reads_the_target_as_variables(ctx: RuntimeContext) -> None:
    script = """\
name: show
description: Print where it runs.
risk: read
target: true
script: 'echo "$target $NAMI_TARGET $NAMI_TARGET_CONTEXT ${NAMI_TARGET_NAMESPACE:-none} $APP_ENV"'
"""
    assert run(ctx, script, {"target": "dev"}).content == "dev dev dev-eu shop-dev development"
    assert run(ctx, script, {"target": "prod"}).content == "prod prod prod-eu none production"


def test_pinned_the_parameter_is_gone_and_every_call_runs_there(ctx: RuntimeContext) -> None:
    pinned = executor(ctx, SHOW, replace(TARGETS, pinned="prod"))
    schema = pinned.definitions()[0]["function"]["parameters"]
    assert "target" not in schema["properties"] and schema["required"] == ["word"]
    prepared = pinned.prepare("show", {"word": "x"})
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.arguments == {"word": "x", "target": "prod"}  # what rules and the audit log see
    assert prepared.run().content == "x|--context=prod-eu|"
    refused = pinned.prepare("show", {"word": "x", "target": "dev"})
    assert isinstance(refused, ToolResult) and "unknown parameter(s) 'target'" in refused.content


REFUSED = [
    (SHOW, TargetSet(), [
        "$.target: target: true, and this project declares no targets: declare them under targets: in agent.yaml "
        "(or write target: optional, to run as it is where there are none)"]),
    (SHOW.replace('["-n", "{target.namespace}"]', '"-n", "{target.namespace}"'), TARGETS, [
        "$.command[5]: {target.namespace}: target prod has no var 'namespace'; give it to every target, or put it "
        "in an optional group (a nested list) that is left out where it is missing"]),
    (SHOW.replace("target: true\n", ""), TARGETS, [
        "$.command[3]: {target.context} is a var of the call's target, and this tool runs on none: add target: true",
        "$.command[4][1]: {target.namespace} is a var of the call's target, and this tool runs on none: add "
        "target: true"]),
    (SHOW.replace("    word: {type: string}\n", "    word: {type: string}\n    target: {type: string}\n"), TARGETS, [
        "$.parameters.properties.target: 'target' is the parameter `target:` adds (one of the project's targets); "
        "rename this one"]),
    ("name: show\ndescription: d\ntarget: true\nentrypoint: mod:run\n", TARGETS, [
        "$.target: target: needs a command or script tool: an entry point runs inside nami's own process, which "
        "cannot take on a target's environment"]),
]


@pytest.mark.parametrize(("text", "targets", "expected"), REFUSED,
                         ids=["no-targets", "var-lacking", "untargeted", "own-parameter", "entrypoint"])
def test_the_loader_reports_what_cannot_work(workdir: Path, text: str, targets: TargetSet, expected: list[str]) -> None:
    assert problems(workdir, text, targets) == expected


def test_a_group_no_target_can_fill_and_a_script_var_some_target_lacks_are_warnings(workdir: Path) -> None:
    nowhere = SHOW.replace("{target.namespace}", "{target.region}")
    assert problems(workdir, nowhere) == [
        "$.command[4][1]: warning: {target.region}: no target has a var 'region', so this group is always left out"]
    script = "name: show\ndescription: d\ntarget: true\nscript: echo $NAMI_TARGET_NAMESPACE\n"
    assert problems(workdir, script) == [
        "$.script: warning: $NAMI_TARGET_NAMESPACE: target prod has no var 'namespace', so it is unset there"]


def test_an_optional_tool_runs_as_it_is_where_there_are_no_targets(ctx: RuntimeContext, workdir: Path) -> None:
    optional = SHOW.replace("target: true", "target: optional").replace(
        '"--context={target.context}"', '["--context={target.context}"]')
    plain = executor(ctx, optional, TargetSet())
    assert "target" not in plain.definitions()[0]["function"]["parameters"]["properties"]
    assert plain.execute("show", {"word": "x"}).content == "x|"
    assert run(ctx, optional, {"word": "x", "target": "dev"}).content == "x|--context=dev-eu|-n|shop-dev|"
    # where no target may be declared, a var needs a group
    assert problems(workdir, SHOW.replace("target: true", "target: optional"), TargetSet()) == [
        "$.command[3]: {target.context} outside an optional group: a target: optional tool also runs where no target "
        "is declared; put it in a group, e.g. [--context, \"{target.context}\"]"]


def test_a_targets_env_takes_host_variables_under_the_tools_rules_for_secrets(ctx: RuntimeContext) -> None:
    ctx = replace(ctx, host_env={**ctx.host_env, "PROD_DB_PASSWORD": "hunter2-hunter2", "REGION": "eu-west-1"},
                  protected_env=frozenset({"NAMI_API_KEY"}))
    text = "name: show\ndescription: d\nrisk: read\ntarget: true\ncommand: [env]\n"
    targets = TargetSet((Target("prod", {"DB_PASSWORD": "${PROD_DB_PASSWORD}", "AWS_REGION": "${REGION}"}),))
    refused = run(ctx, text, {"target": "prod"}, targets)
    assert not refused.ok
    assert refused.content == ("Error: show: target prod's env refers to ${PROD_DB_PASSWORD}, which looks secret; "
                               "list it in env_passthrough to allow it")
    allowed = run(ctx, text.replace("command:", "env_passthrough: [PROD_DB_PASSWORD]\ncommand:"), {"target": "prod"},
                  targets)
    assert {"DB_PASSWORD=hunter2-hunter2", "AWS_REGION=eu-west-1"} <= set(allowed.content.splitlines())
    key = run(ctx, text, {"target": "prod"}, TargetSet((Target("prod", {"NAMI_API_KEY": "x"}),)))
    assert key.content == "Error: show: target prod's env sets NAMI_API_KEY, which is never given to tools"
