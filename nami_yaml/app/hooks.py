"""What agent.yaml's ``hooks:`` do in a run: Claude Code's hook events, their input and their answers.

Each event runs its hooks in the order written (the user config's, then the project's), each one's program
in the sandbox (runners/hooks.py), with the event as JSON on stdin in Claude Code's shapes. Answers:

- exit 0: no opinion, or a JSON object on stdout (``decision``, ``reason``, ``hookSpecificOutput``);
- exit 2: block, standard error is the reason;
- anything else, a timeout, output that is not JSON: the hook failed. Where a hook decides (PreToolUse) a
  failure denies the call (fail closed); where it only observes, it is a notice (fail open).

A PreToolUse hook's opinion joins the one decision path as one more opinion (``Guards.decide``): it may deny
or ask, never loosen. Its ``allow`` skips no question the rules ask, and the person is told so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import CallRecord, Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.config.hooks import (
    POST_TOOL_USE,
    PRE_COMPACT,
    PRE_TOOL_USE,
    SESSION_START,
    STOP,
    SUBAGENT_STOP,
    USER_PROMPT_SUBMIT,
    HookSpec,
)
from nami_yaml.runtime import RuntimeContext

Report = Callable[[str], None]
RunHook = Callable[[HookSpec, dict[str, Any], RuntimeContext], Any]


@dataclass(frozen=True)
class HookAnswer:
    """One hook's answer, read from its exit code and output."""

    spec: HookSpec
    decision: str | None = None  # "allow" | "deny" | "ask" (PreToolUse) or "block"
    reason: str | None = None
    context: str | None = None  # text for the model (additionalContext; stdout of UserPromptSubmit, SessionStart)
    failed: str | None = None  # why it gave no answer
    message: str | None = None  # systemMessage: for the person

    @property
    def source(self) -> str:
        return f"hook {self.spec.event} {self.spec.source}"


def read_answer(spec: HookSpec, exit_code: int | None, stdout: str, stderr: str, failed: str | None) -> HookAnswer:
    if failed:
        return HookAnswer(spec, failed=failed)
    if exit_code == 2:
        return HookAnswer(spec, decision="deny" if spec.event == PRE_TOOL_USE else "block",
                          reason=stderr.strip() or f"blocked by the hook at {spec.source}")
    text = stdout.strip()
    if not text.startswith("{"):
        # Plain output: context for the model where Claude Code adds it (a prompt, a session's start).
        context = text if text and spec.event in (USER_PROMPT_SUBMIT, SESSION_START) else None
        return HookAnswer(spec, context=context)
    try:
        data = json.loads(text)
    except ValueError as exc:
        return HookAnswer(spec, failed=f"its output is not JSON: {exc}")
    if not isinstance(data, dict):
        return HookAnswer(spec, failed="its output is JSON but not an object")
    specific = data.get("hookSpecificOutput") if isinstance(data.get("hookSpecificOutput"), dict) else {}
    decision, reason = data.get("decision"), data.get("reason")
    permission = specific.get("permissionDecision")
    if spec.event == PRE_TOOL_USE and permission in ("allow", "deny", "ask"):
        decision, reason = permission, specific.get("permissionDecisionReason") or reason
    elif decision == "approve":  # Claude Code's older spelling of allow
        decision = "allow"
    elif decision == "block":
        decision = "deny" if spec.event == PRE_TOOL_USE else "block"
    elif decision is not None:
        return HookAnswer(spec, failed=f"unknown decision {decision!r}")
    context = specific.get("additionalContext")
    message = data.get("systemMessage")
    return HookAnswer(spec, decision=decision, reason=str(reason) if reason else None,
                      context=str(context) if context else None, message=str(message) if message else None)


class RunHooks:
    """The hooks of one agent: each event's entry point, run with this agent's session and workspace.

    ``run``: runners.hooks.run_hook (imported when the first hook runs, so a project without hooks loads
    nothing of it); ``report``: a notice for the person (a failed hook that only observes, an allow that
    did not loosen, a systemMessage)."""

    def __init__(self, specs: tuple[HookSpec, ...], context: RuntimeContext, session: Callable[[], str], *,
                 report: Report | None = None, agent: str | None = None,
                 changed: Callable[[HookSpec], list[Any]] | None = None,
                 audit_head: Callable[[], str | None] | None = None):
        self.changed = changed  # the files of a hook's code changed mid-session (app/change_watch.py)
        # The audit log's latest record hash, sent with every hook: a copy kept elsewhere anchors the chain
        self.audit_head = audit_head
        self.specs = specs
        self.context = context
        self.session = session
        self.report = report
        self.agent = agent
        self.stop_active = False  # a Stop hook sent the model back: the next Stop says so

    def of(self, event: str, tool: str | None = None) -> list[HookSpec]:
        return [spec for spec in self.specs if spec.event == event and (tool is None or spec.matches(tool))]

    def _run(self, spec: HookSpec, payload: dict[str, Any]) -> HookAnswer:
        from nami_yaml.runners.hooks import run_hook

        changed = self.changed(spec) if self.changed is not None else []
        if changed:
            # Code a call planted where the hook imports from (a json.py beside `python3 -m hookpkg`): the hook
            # is not run. Where it decides, that denies (fail closed); where it observes, a notice.
            shown = ", ".join(str(path) for path in changed[:3])
            return HookAnswer(spec, failed=f"its code changed during this session ({shown}); it is not run")
        base = {"session_id": self.session(), "transcript_path": None, "cwd": str(self.context.workspace),
                "hook_event_name": spec.event, "permission_mode": "default"}
        if self.agent:
            base["agent"] = self.agent
        if self.audit_head is not None and (head := self.audit_head()):
            base["nami_audit_head"] = head
        try:
            run = run_hook(spec, {**base, **payload}, self.context)
        except Exception as exc:  # a hook that cannot be run is a failed hook, never a crash of the run
            return HookAnswer(spec, failed=f"{type(exc).__name__}: {exc}")
        answer = read_answer(spec, run.exit_code, run.stdout, run.stderr, run.failed)
        if answer.message:
            self._say(f"{answer.source}: {answer.message}")
        return answer

    def _say(self, message: str) -> None:
        if self.report is not None:
            self.report(message)

    def _observe(self, event: str, payload: dict[str, Any], tool: str | None = None) -> list[HookAnswer]:
        """Run an event's hooks that only observe: a failure is a notice."""
        answers = [self._run(spec, payload) for spec in self.of(event, tool)]
        for answer in answers:
            if answer.failed:
                self._say(f"{answer.source} failed ({answer.failed}); the run goes on")
        return answers

    # -- the events ------------------------------------------------------------------------------------

    def pre_tool_use(self, call: PreparedCall) -> Decision | None:
        """A before_tool opinion: the strictest of the matching hooks'; a hook that failed denies."""
        opinions: list[Decision] = []
        for spec in self.of(PRE_TOOL_USE, call.name):
            answer = self._run(spec, {"tool_name": call.name, "tool_input": call.arguments,
                                      "tool_use_id": getattr(call, "call_id", None)})
            if answer.failed:
                return Decision.deny(f"the hook at {spec.source} failed ({answer.failed}): a hook that decides "
                                     "fails closed", answer.source)
            if answer.decision == "deny":
                return Decision.deny(answer.reason or "denied by a hook", answer.source)
            if answer.decision == "ask":
                opinions.append(Decision.ask(answer.reason, answer.source))
            elif answer.decision == "allow":
                opinions.append(Decision.allow(answer.reason, answer.source))
        asks = [opinion for opinion in opinions if opinion.action == "ask"]
        return asks[0] if asks else (opinions[0] if opinions else None)

    def allow_did_not_loosen(self, call: PreparedCall, hook: Decision, decided: Decision) -> None:
        self._say(f"{hook.source} allowed {call.name}, but {decided.source or 'the policy'} "
                  f"{'asks' if decided.action == 'ask' else 'denies'}: a hook never loosens what the rules decide")

    def post_tool_use(self, record: CallRecord) -> str | None:
        """A result note: what a PostToolUse hook that blocks says to the model, with the result."""
        if record.prepared is None or record.started is None:
            return None
        payload = {"tool_name": record.prepared.name, "tool_input": record.prepared.arguments,
                   "tool_use_id": record.call.id,
                   "tool_response": {"content": record.result.content, "ok": record.result.ok}}
        notes: list[str] = []
        for answer in self._observe(POST_TOOL_USE, payload, record.prepared.name):
            if answer.decision == "block":
                notes.append(f"[{answer.source}: {answer.reason or 'blocked'}]")
            if answer.context:
                notes.append(answer.context)
        return "\n".join(notes) or None

    def user_prompt(self, prompt: str) -> tuple[str | None, list[str]]:
        """UserPromptSubmit: why the prompt is refused (None: it goes on), and context to add to it."""
        context: list[str] = []
        for answer in self._observe(USER_PROMPT_SUBMIT, {"prompt": prompt}):
            if answer.decision == "block":
                return answer.reason or f"blocked by the hook at {answer.spec.source}", context
            if answer.context:
                context.append(answer.context)
        return None, context

    def session_start(self, source: str) -> list[str]:
        """SessionStart (source: startup, resume): context for the model."""
        return [answer.context for answer in self._observe(SESSION_START, {"source": source}) if answer.context]

    def stop(self, answer_text: str | None, *, subagent: bool = False) -> str | None:
        """An after_answer hook (Stop, or SubagentStop for a named agent's run): a Stop hook that blocks sends
        its reason back to the model as the next message; the run goes on (max_steps holds)."""
        event = SUBAGENT_STOP if subagent else STOP
        payload = {"stop_hook_active": self.stop_active, "last_assistant_message": answer_text}
        for answer in self._observe(event, payload):
            if answer.decision == "block":
                self.stop_active = True
                return answer.reason or f"the hook at {answer.spec.source} asks you to go on"
        self.stop_active = False
        return None

    def pre_compact(self, trigger: str) -> None:
        self._observe(PRE_COMPACT, {"trigger": trigger, "custom_instructions": ""})
