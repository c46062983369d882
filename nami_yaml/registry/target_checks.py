"""What the loader checks about a tool that runs on a target, against the project's targets: ``target:`` where
it can work, ``{target.NAME}`` placeholders naming vars the targets have, ``$NAMI_TARGET_NAME`` in scripts."""

from __future__ import annotations

import re

from nami_yaml.registry.argv_checks import template_refs
from nami_yaml.registry.draft import ToolDraft
from nami_yaml.registry.targets import OPTIONAL, TARGET_PARAMETER, TRUE
from nami_yaml.runners.template import TARGET_PREFIX, walk_argv

_SCRIPT_VAR = re.compile(r"NAMI_TARGET_([A-Z0-9_]+)")



def check_target(draft: ToolDraft) -> None:
    """``target:`` on a tool that can take one, in a project that has targets, with no parameter of its own
    named ``target``."""
    mode = draft.target_mode
    if mode is None:
        return
    if draft.runner_kind == "entrypoint":
        draft.error(("target",), "target: needs a command or script tool: an entry point runs inside nami's own "
                                 "process, which cannot take on a target's environment", key=True)
    if mode == TRUE and not draft.targets:
        draft.error(("target",), "target: true, and this project declares no targets: declare them under targets: "
                                 "in agent.yaml (or write target: optional, to run as it is where there are none)",
                    key=True)
    own = draft.parameters.get("properties")
    if isinstance(own, dict) and TARGET_PARAMETER in own:
        draft.error(draft.parameter_path(TARGET_PARAMETER),
                    f"'{TARGET_PARAMETER}' is the parameter `target:` adds (one of the project's targets); "
                    "rename this one", key=True)


def check_target_placeholders(draft: ToolDraft) -> None:
    """``{target.NAME}`` only in a targeted tool; outside an optional group, a var every target has (an
    ``optional`` tool also runs where no target is declared, so there it always needs a group)."""
    elements = [((*key, *path), template, depth) for key, argv in draft.argvs
                for path, template, depth in walk_argv(argv)]
    stdin = draft.text("stdin")
    if stdin is not None:
        elements.append((("stdin",), stdin, -1))  # a missing var renders as nothing there
    for where, template, depth in elements:
        for name in dict.fromkeys(template_refs(template)):
            if name.startswith(TARGET_PREFIX):
                _check_var(draft, where, name, depth)
            elif name == TARGET_PARAMETER and draft.target_mode == OPTIONAL and depth == 0:
                draft.error(where, _group_needed("{target}"))


def _check_var(draft: ToolDraft, where: tuple[str | int, ...], ref: str, depth: int) -> None:
    var = ref[len(TARGET_PREFIX):]
    shown = "{" + ref + "}"
    mode = draft.target_mode
    if mode is None:
        draft.error(where, f"{shown} is a var of the call's target, and this tool runs on none: add target: true")
        return
    if depth == 0 and mode == OPTIONAL:
        draft.error(where, _group_needed(shown))
        return
    targets = draft.targets
    lacking = [t.name for t in targets.targets if var not in t.vars]
    if mode != TRUE or not targets or not lacking:
        return
    if depth == 0:
        draft.error(where, f"{shown}: {_lacking(lacking, var)}; give it to every target, or put it in an optional "
                           f"group (a nested list) that is left out where it is missing")
    elif depth > 0 and len(lacking) == len(targets.targets):
        draft.warn(where, f"{shown}: no target has a var '{var}', so this group is always left out")


def _group_needed(shown: str) -> str:
    return (f"{shown} outside an optional group: a target: optional tool also runs where no target is declared; "
            f"put it in a group, e.g. [--context, \"{{target.context}}\"]")


def _lacking(names: list[str], var: str) -> str:
    which = f"target {names[0]} has" if len(names) == 1 else f"targets {', '.join(names)} have"
    return f"{which} no var '{var}'"


def check_script_target_vars(draft: ToolDraft) -> None:
    """``$NAMI_TARGET_NAME`` in a script: set only for a targeted tool, and only where the target has NAME."""
    script = draft.raw.get(draft.runner_key) if draft.runner_kind == "script" and draft.runner_key else None
    if not isinstance(script, str):
        return
    mentioned = dict.fromkeys(_SCRIPT_VAR.findall(script))
    if draft.target_mode is None:
        if "NAMI_TARGET" in script:
            draft.warn((draft.runner_key,), "$NAMI_TARGET is set only for a tool with target: true; this one runs "
                                            "on no target")
        return
    if draft.target_mode != TRUE or not draft.targets:
        return
    for upper in mentioned:
        var = upper.lower()
        lacking = [t.name for t in draft.targets.targets if var not in t.vars]
        if lacking:
            draft.warn((draft.runner_key,), f"$NAMI_TARGET_{upper}: {_lacking(lacking, var)}, so it is unset there")
