"""Everything the loader checks beyond the tool schema, as one list of checks run on every tool.

Each check looks at a ToolDraft and reports through ``draft.error`` / ``draft.warn``; none stops the
others, so one `nami check` shows every problem of every tool. To add a rule, write a function taking a
ToolDraft and append it to TOOL_CHECKS (and to MACHINE_CHECKS if it looks at anything but the tool file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from nami_yaml.paths import path_for_messages
from nami_yaml.registry.argv_checks import (
    check_code_arguments,
    check_command,
    check_command_text,
    check_maps,
    check_placeholders,
    check_program,
    check_script_dash,
    command_refs,
    template_refs,
)
from nami_yaml.registry.draft import ToolDraft
from nami_yaml.registry.foreign_checks import check_foreign_spellings
from nami_yaml.registry.output_checks import check_output
from nami_yaml.registry.ref_cycles import check_ref_targets
from nami_yaml.registry.sandbox_checks import check_sandbox_needs
from nami_yaml.registry.schema_checks import (
    check_local_refs,
    check_own_values,
    check_parameters_schema,
    check_patterns,
)
from nami_yaml.registry.schema_keywords import check_schema_keywords
from nami_yaml.registry.target_checks import check_script_target_vars, check_target, check_target_placeholders
from nami_yaml.registry.targets import TARGET_PARAMETER
from nami_yaml.runners.entrypoint import CONTEXT_PARAMETER
from nami_yaml.runners.filters import select_refs
from nami_yaml.runners.plan_step import PLAN_FILE
from nami_yaml.runners.script import ARGS_VARIABLE, parameter_name_problem
from nami_yaml.spec.validate import did_you_mean

ToolCheck = Callable[[ToolDraft], None]


def check_runner(draft: ToolDraft) -> None:
    if not draft.runners:
        draft.error((), "missing runner: a tool needs one of command, pipeline, script or entrypoint")
    elif len(draft.runners) > 1:
        draft.error((draft.runners[1],), f"a tool has exactly one runner; found {' and '.join(draft.runners)}",
                    key=True)


def check_allow_dash_names(draft: ToolDraft) -> None:
    for name in draft.strings("allow_dash"):
        if name not in draft.properties:
            draft.error(("allow_dash",), f"allow_dash names '{name}', which is not a parameter"
                                         f"{did_you_mean(name, list(draft.properties))}")


def check_writes_names(draft: ToolDraft) -> None:
    for name in draft.strings("writes"):
        if name not in draft.properties:
            draft.error(("writes",), f"writes names '{name}', which is not a parameter"
                                     f"{did_you_mean(name, list(draft.properties))}")


def check_cwd(draft: ToolDraft) -> None:
    """A fixed folder inside the workspace; `nami check` also warns when it is missing there."""
    cwd = draft.text("cwd")
    if cwd is None:
        return
    if "{" in cwd or os.path.isabs(cwd):
        draft.error(("cwd",), "cwd is a fixed folder relative to the workspace (no placeholders, not absolute)")
    elif cwd.startswith("~"):
        draft.error(("cwd",), f"cwd {cwd!r} starts with '~', which is not expanded: cwd is a folder relative "
                              f"to the workspace")
    elif "\x00" in cwd:
        draft.error(("cwd",), "cwd contains a NUL byte, so no such folder can exist")
    elif os.path.normpath(cwd).split(os.sep)[0] == "..":
        draft.error(("cwd",), f"cwd {cwd!r} leaves the workspace; it must be a folder inside it")
    elif draft.host is not None:
        workspace = draft.host.workspace.resolve()
        folder = (workspace / cwd).resolve()
        shown = path_for_messages(workspace)
        if os.path.commonpath([folder, workspace]) != str(workspace):
            draft.warn(("cwd",), f"cwd {cwd!r} leads outside the workspace ({shown}) through a link; "
                                 f"the tool will refuse to run")
        elif not folder.is_dir():
            draft.warn(("cwd",), f"cwd {cwd!r} is not a folder in the workspace ({shown}); the tool fails "
                                 f"until it exists")


def check_stdin(draft: ToolDraft) -> None:
    stdin = draft.text("stdin")
    if stdin is not None and draft.runner_kind in ("command", "pipeline", "script"):
        check_placeholders(draft, ("stdin",), stdin)


def check_script_names(draft: ToolDraft) -> None:
    if draft.runner_kind != "script":
        return
    for name in draft.properties:
        problem = parameter_name_problem(name)
        if problem:
            draft.error(draft.parameter_path(name), problem, key=True)


def check_entrypoint_context(draft: ToolDraft) -> None:
    if draft.runner_kind == "entrypoint" and CONTEXT_PARAMETER in draft.properties:
        draft.error(draft.parameter_path(CONTEXT_PARAMETER),
                    f"'{CONTEXT_PARAMETER}' is reserved for entry points: it receives nami's runtime context",
                    key=True)


def check_plan(draft: ToolDraft) -> None:
    """``plan:`` runs on command tools (its argvs are checked with the command's); ``plan_file`` is then the
    call's plan file, not a parameter."""
    if "plan" not in draft.raw:
        return
    if draft.runner_kind not in (None, "command"):
        draft.error(("plan",), f"plan: is for command: tools; a {draft.runner_kind} tool cannot have one", key=True)
    if PLAN_FILE in draft.properties:
        draft.error(draft.parameter_path(PLAN_FILE), f"'{PLAN_FILE}' is the call's plan file in a tool with plan:, "
                                                     "not a parameter: rename it", key=True)


def output_refs(output: Any) -> set[str]:
    """The parameters an ``output:`` uses: in its select and its line filters."""
    if not isinstance(output, dict):
        return set()
    used = set(select_refs(output["select"])) if isinstance(output.get("select"), str) else set()
    for key in ("grep", "lines", "head", "tail"):
        if isinstance(output.get(key), str):
            used |= set(template_refs(output[key]))
    return used


def check_unused_parameters(draft: ToolDraft) -> None:
    """A required parameter the command never uses is an error (every call would carry it for nothing);
    an optional one a warning. Entry points receive every argument, so they use them all."""
    kind = draft.runner_kind
    runner = draft.raw.get(draft.runner_key) if draft.runner_key else None
    stdin = draft.text("stdin")
    used = set(template_refs(stdin)) if stdin else set()
    used |= output_refs(draft.raw.get("output"))
    if kind in ("command", "pipeline") and draft.argvs:
        used |= {name for _, argv in draft.argvs for name in command_refs(argv)}
    elif kind == "script" and isinstance(runner, str):
        if ARGS_VARIABLE in runner:
            return  # the script reads the arguments from $NAMI_ARGS (jq, python): no telling which
        # Any mention counts ($top, ${top:-1}, $((top + 1))): a warning must never be wrong.
        used |= {name for name in draft.properties if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}\b", runner)}
        used |= {name for name in draft.properties if parameter_name_problem(name)}  # an error already
    else:
        return
    for name in draft.properties:
        if name in used or (name == TARGET_PARAMETER and draft.targeted):
            continue  # a target is used by running there, whether or not the command names it
        what = f"the {kind} or stdin"
        if name in draft.required and kind in ("command", "pipeline"):
            draft.error(draft.parameter_path(name), f"required parameter '{name}' is never used by {what}", key=True)
        else:
            draft.warn(draft.parameter_path(name), f"parameter '{name}' is never used by {what}", key=True)


TOOL_CHECKS: list[ToolCheck] = [
    check_runner,
    check_parameters_schema,
    check_schema_keywords,
    check_patterns,
    check_own_values,
    check_local_refs,
    check_ref_targets,
    check_allow_dash_names,
    check_writes_names,
    check_cwd,
    check_stdin,
    check_command_text,
    check_command,
    check_maps,
    check_foreign_spellings,
    check_script_dash,
    check_code_arguments,
    check_script_names,
    check_entrypoint_context,
    check_unused_parameters,
    check_program,
    check_sandbox_needs,
    check_target,
    check_target_placeholders,
    check_script_target_vars,
    check_output,
    check_plan,
]

# The checks that look at this machine (``draft.host``: programs on PATH, the workspace's folders, the
# sandbox's settings) rather than the tool file alone. A file found valid is kept between commands
# (spec/validated_cache.py) and not checked again, except by these, run again each time: a new check that
# looks beyond the file's own text belongs here too (the loader also rechecks ``docs:`` beside the file).
MACHINE_CHECKS: tuple[ToolCheck, ...] = (check_cwd, check_program, check_sandbox_needs)
