"""A task's checks, evaluated after its run: each one passes or fails with a reason a person can act on.
Every check is evaluated (none is skipped because an earlier one failed), so a result shows all reasons."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nami_yaml.batch.workspace import run_command
from nami_yaml.runners.sandbox.plan import SandboxPlan
from nami_yaml.spec.validate import short

QUOTE = 200  # characters of the answer quoted in a failed answer_matches


@dataclass
class RunFacts:
    """What the checks look at: the answer, the tools the model called, the workspace afterwards."""

    answer: str | None
    called: list[str]  # tool names, in order, one per call the model made (denied ones included)
    workspace: Path
    env: Mapping[str, str]  # for check commands
    remaining: Callable[[], float]  # seconds left of the task's wall time
    cancel: threading.Event | None = None
    # The answer as a JSON value (the structured answer, else the answer's text read as JSON), or None with
    # ``no_value`` saying why there is none.
    value: Any = None
    no_value: str | None = None
    # Check commands' sandbox (batch.workspace.command_sandbox); None runs them as they are. No default.
    sandbox: SandboxPlan | None = field(kw_only=True)


def called_tools(messages: list[dict[str, Any]]) -> list[str]:
    """Every tool call the model made in ``messages``, by name."""
    names = []
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                names.append(str((call.get("function") or {}).get("name")))
    return names


def run_checks(checks: list[dict[str, Any]], facts: RunFacts) -> list[dict[str, Any]]:
    """``[{"check": <as written>, "passed": bool, "reason": str}]`` in the order written."""
    return [_result(check, *_evaluate(check, facts)) for check in checks]


def _result(check: dict[str, Any], passed: bool, reason: str) -> dict[str, Any]:
    return {"check": check, "passed": passed, "reason": reason}


def _evaluate(check: dict[str, Any], facts: RunFacts) -> tuple[bool, str]:
    kind, value = next(iter(check.items()))
    if kind == "answer_matches":
        answer = facts.answer or ""
        if re.search(value, answer):
            return True, f"the answer matches /{value}/"
        quoted = answer if len(answer) <= QUOTE else answer[: QUOTE - 1] + "…"
        return False, (f"the answer does not match /{value}/: {quoted!r}" if facts.answer is not None
                       else f"no answer to match /{value}/")
    if kind == "file_exists":
        exists = (facts.workspace / value).exists()
        return exists, f"{value} {'exists' if exists else 'does not exist'}"
    if kind == "file_contains":
        return _file_contains(facts.workspace / value["path"], value["path"], value["text"])
    if kind == "command":
        left = facts.remaining()
        if left <= 0:
            return False, "not run: the task's wall time is used up"
        run = run_command(value, facts.workspace, facts.env, left, facts.cancel, sandbox=facts.sandbox)
        return run.ok, run.describe()
    if kind == "called":
        count = facts.called.count(value)
        return count > 0, (f"{value} was called {_times(count)}" if count else
                           f"{value} was not called (called: {', '.join(sorted(set(facts.called))) or 'no tool'})")
    if kind == "answer_field":
        return _answer_field(value, facts)
    if kind == "not_called":
        count = facts.called.count(value)
        return count == 0, f"{value} was called {_times(count)}" if count else f"{value} was not called"
    return False, f"unknown check {kind!r}"  # the schema keeps this from happening


def _file_contains(path: Path, shown: str, text: str) -> tuple[bool, str]:
    try:
        content = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False, f"{shown} does not exist"
    except IsADirectoryError:
        return False, f"{shown} is a folder"
    except OSError as exc:
        return False, f"cannot read {shown}: {exc.strerror or exc}"
    found = text in content
    return found, f"{shown} {'contains' if found else 'does not contain'} {text!r}"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _answer_field(check: dict[str, Any], facts: RunFacts) -> tuple[bool, str]:
    from jmespath.exceptions import JMESPathError

    from nami_yaml.runners.shape import compiled

    path = check["path"]
    if facts.no_value is not None:
        return False, f"no JSON answer to read {path} from: {facts.no_value}"
    try:
        found = compiled(path).search(facts.value)
    except JMESPathError as exc:
        return False, f"{path} cannot be read from the answer: {str(exc).splitlines()[0]}"
    shown = short(found, QUOTE)
    if "equals" in check:
        expected = check["equals"]
        if _same(found, expected):
            return True, f"the answer's {path} is {shown}"
        return False, f"the answer's {path} is {shown}, not {short(expected, QUOTE)}"
    if "matches" in check:
        if not isinstance(found, str):
            return False, f"the answer's {path} is {shown}, not a string to match /{check['matches']}/"
        matched = re.search(check["matches"], found) is not None
        return matched, f"the answer's {path} {'matches' if matched else 'does not match'} /{check['matches']}/: {shown}"
    return found is not None, (f"the answer's {path} is {shown}" if found is not None
                               else f"the answer has no {path} (null)")


def _same(found: Any, expected: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if isinstance(found, bool) or isinstance(expected, bool):
        return found is expected
    if isinstance(found, list) and isinstance(expected, list):
        return len(found) == len(expected) and all(_same(a, b) for a, b in zip(found, expected, strict=True))
    if isinstance(found, dict) and isinstance(expected, dict):
        return found.keys() == expected.keys() and all(_same(found[k], expected[k]) for k in found)
    return bool(found == expected)
