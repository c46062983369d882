"""Structured answers: a final answer that must be a JSON value matching a JSON Schema (``nami run --schema``,
``answer_schema:`` in agent.yaml or a batch task, ``Agent.from_config(answer_schema=...)``).

The model is told the schema: through the provider's ``response_format`` where its preset's
``response_format`` quirk says it takes one, in the system prompt otherwise. The answer is read (the whole
text, or the one fenced code block it holds) and validated; on a mismatch the errors go back to the model as
the user's message and it tries again, ``limits.schema_retries`` times. The loop knows none of this: it calls
the ``after_answer`` hook this module provides, and an ``after_run`` hook puts the value on the outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nami_yaml.agent.hooks import StopRun
from nami_yaml.config.effective import Effective
from nami_yaml.registry.patterns import PatternTimeout, argument_validator, pattern_budget
from nami_yaml.spec.json_schemas import mismatches, read_schema

INVALID_ANSWER = "invalid_answer"  # the run's status when no answer matched
# One fenced code block (```json, ``` or ~~~), the whole of what the model wrote around its JSON.
_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*\1[ \t]*$", re.S | re.M)


def resolve_schema(given: Any, settings: Effective, *, base: Path | None = None) -> dict[str, Any] | None:
    """The answer schema a run uses: ``given`` (a mapping, inline JSON or a file path relative to ``base``;
    ``False``: none, whatever the settings say), else the settings' ``answer_schema`` (already read and
    checked with agent.yaml). Raises ConfigError or SpecError for a schema that cannot be used."""
    if given is False:
        return None
    if given is not None:
        return read_schema(dict(given) if isinstance(given, Mapping) else given, base=base or Path.cwd(),
                           what="answer_schema")
    configured = settings.get("answer_schema")
    return configured if isinstance(configured, dict) else None


def read_answer(text: str | None) -> Any:
    """The JSON value of an answer: its whole text, or the one fenced code block in it (models wrap JSON
    in ```json fences whatever they are told; what surrounds the block is dropped). Raises ValueError with
    a reason the model can act on."""
    stripped = (text or "").strip()
    if not stripped:
        raise ValueError("the answer was empty")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as whole:
        blocks = _FENCE.findall(stripped)
        if len(blocks) == 1:
            try:
                return json.loads(blocks[0][1])
            except json.JSONDecodeError as exc:
                raise ValueError(f"the code block in the answer is not valid JSON ({_where(exc)})") from None
        if len(blocks) > 1:
            raise ValueError(f"the answer holds {len(blocks)} code blocks; give one JSON value") from None
        raise ValueError(f"the answer is not valid JSON ({_where(whole)})") from None


def _where(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} at line {exc.lineno} column {exc.colno}"


class StructuredAnswers:
    """The hooks and instructions of one agent's structured answers. Per run: the retries used, and the
    value read from the accepted answer."""

    def __init__(self, schema: dict[str, Any], *, retries: int, response_format: str):
        self.schema = schema
        self.retries = max(0, int(retries))
        self.mode = response_format if _is_object(schema) else "none"  # JSON modes produce objects
        # Its patterns matched with a time budget, as a tool's arguments are (registry/patterns.py): the schema
        # is the project's, the answer the model's, and ^(a|a)+$ on a long answer would hold the run.
        self._check = argument_validator(schema)
        self._tries = 0
        self._value: Any = None
        self._read = False

    # -- telling the model ----------------------------------------------------------------------------

    def request_options(self) -> dict[str, Any]:
        """Request body options for the provider's JSON mode ({} when the instructions do it all)."""
        if self.mode == "json_schema":
            # strict: false. Strict mode accepts only a subset of JSON Schema (every property required, no
            # others) and refuses the request otherwise; nami validates the answer itself, so any schema works.
            return {"response_format": {"type": "json_schema",
                                        "json_schema": {"name": "answer", "schema": self.schema, "strict": False}}}
        if self.mode == "json_object":
            return {"response_format": {"type": "json_object"}}
        return {}

    def instructions(self) -> str | None:
        """What the system prompt says about the answer, unless the provider is given the schema itself."""
        if self.mode == "json_schema":
            return None
        schema = self._compact_schema()
        return ("Your final answer (the message in which you call no tool) must be one JSON value and nothing "
                "else, no prose and no code fence, matching this JSON Schema:\n" + schema)

    def _compact_schema(self) -> str:
        return json.dumps(self.schema, ensure_ascii=False, separators=(",", ":"))

    # -- the hooks ------------------------------------------------------------------------------------

    def __call__(self, text: str | None) -> str | None:
        """after_answer: None accepts the answer; a message sends it back; StopRun once retries run out."""
        try:
            value = read_answer(text)
        except ValueError as exc:
            # The schema again: the system prompt may not have it (a provider's JSON mode was given it, or a
            # session recorded before the schema was chosen goes on).
            return self._again([str(exc)], "Answer with only a JSON value, no other text, matching this JSON "
                                           f"Schema:\n{self._compact_schema()}")
        try:
            with pattern_budget():
                problems = mismatches(self._check, value)
        except PatternTimeout as exc:
            return self._again([f"the answer could not be checked: {exc}"], "Answer again with only the JSON value.")
        if not problems:
            self._value, self._read = value, True
            return None
        return self._again([f"the answer does not match the schema: {p}" for p in problems],
                           "Answer again with only the corrected JSON value.")

    def _again(self, problems: list[str], ask: str) -> str:
        listing = "\n".join(f"- {p}" for p in problems)
        if self._tries >= self.retries:
            tries = f"{self.retries} retr{'y' if self.retries == 1 else 'ies'}"
            raise StopRun(f"no answer matching the answer schema after {tries}:\n{listing}", INVALID_ANSWER)
        self._tries += 1
        return f"{listing}\n{ask}"

    def finish(self, outcome: Any) -> None:
        """after_run: the accepted answer's value on the outcome (and so in the final event); the next run
        starts with its retries again."""
        outcome.structured = True
        outcome.answer = self._value if self._read and outcome.status == "answered" else None
        self._tries, self._value, self._read = 0, None, False


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


def structured_answers(schema: dict[str, Any] | None, settings: Effective) -> StructuredAnswers | None:
    if schema is None:
        return None
    quirks = settings.model.quirks
    return StructuredAnswers(schema, retries=settings.limits.schema_retries,
                             response_format=str(quirks.get("response_format") or "none"))
