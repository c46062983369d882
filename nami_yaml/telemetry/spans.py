"""The loop's events as OpenTelemetry spans, by the GenAI semantic conventions: ``invoke_agent {agent}`` for a
run, ``chat {model}`` for each model request under it, ``execute_tool {name}`` for each call (its decision,
who made it, risk, target, sandbox and exit status; approvals and refusals as span events). A sub-agent's
run nests under the call that started it; a call's trace context goes to what it starts (the carrier in
ToolDecided). Text (answers, arguments, output) only with ``content``, redacted as the audit log redacts.

Imports OpenTelemetry: only a traced run imports this module (nami_yaml/telemetry/switch.py decides).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.re import parse_env_headers

from nami_yaml.agent.events import Event
from nami_yaml.policy.audit import host_secrets, redact, scrub_text, secret_values
from nami_yaml.telemetry.switch import Tracing
from nami_yaml.version import __version__

TRACER_NAME = "nami_yaml"
PROPAGATOR = TraceContextTextMapPropagator()
MAX_CONTENT = 16_000  # characters of one text attribute (content: true): a whole file's output stays out
FLUSH_MILLIS = 5_000  # how long the end of a top-level run waits for its spans to be sent
# Seconds one export may take, retries included, unless $OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT says: the
# exporter's own default (10 s) is what a run would wait at its end for a collector that is down.
EXPORT_SECONDS = 3.0
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")

_providers: dict[Any, tuple[TracerProvider, Exporter]] = {}
_providers_lock = threading.Lock()
_log = logging.getLogger(__name__)


class Exporter(SpanExporter):
    """The OTLP exporter, saying once (not at every retry, as the exporter's own log does) that a collector
    cannot be reached, and remembering it: a run does not wait at its end for a collector that is down."""

    def __init__(self, inner: SpanExporter, endpoint: str):
        self.inner = inner
        self.endpoint = endpoint
        self.failing = False

    def export(self, spans: Any) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.FAILURE and not self.failing:
            _log.warning("nami: traces could not be sent to %s (runs go on; see docs/telemetry.md)", self.endpoint)
        self.failing = result is SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def tracer_for(tracing: Tracing, env: Mapping[str, str]) -> tuple[trace.Tracer, TracerProvider, Exporter]:
    """One provider (and its exporter and batch of spans) per destination for the whole process: every
    agent of a chat, a batch worker's tasks and sub-agents share it. Not the global provider: an application
    using the Python API keeps its own."""
    key = (tracing.endpoint, tracing.service_name, tuple(sorted(tracing.resource_attributes.items())))
    with _providers_lock:
        made = _providers.get(key)
        if made is None:
            attributes: dict[str, Any] = {"service.version": __version__, **tracing.resource_attributes}
            if tracing.service_name is not None:  # else OTEL_SERVICE_NAME, which Resource.create reads
                attributes["service.name"] = tracing.service_name
            provider = TracerProvider(resource=Resource.create(attributes))
            headers = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS")
            timeout = None if any(env.get(name) for name in TIMEOUT_VARIABLES) else EXPORT_SECONDS
            exporter = Exporter(OTLPSpanExporter(endpoint=tracing.endpoint, timeout=timeout,
                                                 headers=parse_env_headers(headers, liberal=True) if headers else None),
                                tracing.endpoint)
            # Its retries are logged at every attempt; Exporter says it once.
            logging.getLogger("opentelemetry.exporter.otlp").setLevel(logging.CRITICAL)
            provider.add_span_processor(BatchSpanProcessor(exporter))
            made = _providers[key] = provider, exporter
    provider, exporter = made
    return provider.get_tracer(TRACER_NAME, __version__), provider, exporter


class BatchSpan:
    """The span of a whole batch (``nami batch run``): each task's run starts a trace of its own, linked to
    this one (a trace per task stays readable; the link finds them all). ``carrier``: its trace context."""

    def __init__(self, tracing: Tracing, env: Mapping[str, str], name: str, tasks: int):
        tracer, self.provider, self.exporter = tracer_for(tracing, env)
        self.span = tracer.start_span(f"batch {name}", context=Context(), kind=SpanKind.INTERNAL,
                                      attributes={"nami.batch.tasks_file": name, "nami.batch.tasks": tasks})
        self.carrier: dict[str, str] = {}
        PROPAGATOR.inject(self.carrier, context=trace.set_span_in_context(self.span))

    def end(self, interrupted: bool) -> None:
        if interrupted:
            self.span.set_status(Status(StatusCode.ERROR, "interrupted"))
        self.span.end()
        if not self.exporter.failing:
            self.provider.force_flush(FLUSH_MILLIS)


@dataclass(frozen=True)
class AgentFacts:
    """What the spans say of the agent: its name, the provider, the model (asked at each request: chat's
    /model changes it), the endpoint, the conversation (asked at the end: a session may set it late)."""

    name: str
    provider: str
    model: Callable[[], str | None]
    base_url: str | None
    conversation: Callable[[], str | None]


class RunTracer:
    """An event sink (EventBus.add) making spans of one agent's runs. ``parent``: trace context to nest the
    runs under (the carrier of the call that started a sub-agent, or the TRACEPARENT nami was started
    with); ``link``: another trace's context to link each run's trace to (a batch's); ``flush``: send the
    spans at the end of each run (a top-level agent)."""

    def __init__(self, tracing: Tracing, facts: AgentFacts, env: Mapping[str, str], *,
                 parent: Mapping[str, str] | None = None, link: Mapping[str, str] | None = None, flush: bool = True):
        self.tracer, self.provider, self.exporter = tracer_for(tracing, env)
        self.facts = facts
        self.content = tracing.content
        self.parent = dict(parent) if parent else None
        self.link = dict(link) if link else None
        self.flush = flush
        self.secrets = host_secrets()
        self._lock = threading.Lock()
        self._run: Span | None = None
        self._chat: Span | None = None
        self._answer: str | None = None
        self._tools: dict[str, Span] = {}
        self._audit_head: str | None = None  # the hash of this run's latest audit record (docs/security.md)
        self._handlers: dict[str, Callable[[Any], None]] = {
            "run_start": self._run_started, "request_start": self._request_started, "message": self._message,
            "response": self._responded, "tool_call": self._tool_called, "tool_decided": self._tool_decided,
            "approval": self._approval, "tool_result": self._tool_result, "error": self._error,
            "final": self._final,
        }

    def __call__(self, event: Event) -> None:
        handler = self._handlers.get(event.type)
        if handler is not None:
            with self._lock:
                handler(event)

    # -- the run ----------------------------------------------------------------------------------------

    def _run_started(self, event: Any) -> None:
        self._end_open("a new run started")
        links = []
        if self.link:
            linked = trace.get_current_span(PROPAGATOR.extract(self.link)).get_span_context()
            if linked.is_valid:
                links.append(Link(linked, {"nami.link": "batch"}))
        parent = PROPAGATOR.extract(self.parent) if self.parent else Context()
        self._run = self.tracer.start_span(
            f"invoke_agent {self.facts.name}", context=parent, kind=SpanKind.INTERNAL, links=links,
            attributes=_clean({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": self.facts.name,
                               "gen_ai.provider.name": self.facts.provider,
                               "gen_ai.request.model": self.facts.model()}))

    def _final(self, event: Any) -> None:
        self._end_open(event.error or event.status)
        run, self._run = self._run, None
        if run is None:
            return
        usage = event.usage or {}
        run.set_attributes(_clean({
            "gen_ai.conversation.id": self.facts.conversation(), "nami.run.status": event.status,
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            "gen_ai.usage.cache_read.input_tokens": usage.get("cached_tokens"),
            "nami.run.cost": (event.totals or {}).get("cost"),
            "nami.audit.head": self._audit_head,
        }))
        if self.content and event.text:
            run.set_attribute("gen_ai.output.messages", self._text(_messages("assistant", event.text, "stop")))
        if event.status != "answered":
            run.set_status(Status(StatusCode.ERROR, self._scrub(event.error or event.status)))
            run.set_attribute("error.type", event.status)
        run.end()
        if self.flush and not self.exporter.failing:  # (a collector that is down is not waited for again)
            self.provider.force_flush(FLUSH_MILLIS)

    # -- model requests ---------------------------------------------------------------------------------

    def _request_started(self, event: Any) -> None:
        if self._chat is not None:
            self._chat.end()
        model = self.facts.model()
        address = urlsplit(self.facts.base_url) if self.facts.base_url else None
        self._answer = None
        self._chat = self.tracer.start_span(
            f"chat {model}" if model else "chat", context=self._in_run(), kind=SpanKind.CLIENT,
            attributes=_clean({"gen_ai.operation.name": "chat", "gen_ai.provider.name": self.facts.provider,
                               "gen_ai.request.model": model, "nami.step": event.step,
                               "server.address": address.hostname if address else None,
                               "server.port": _port(address) if address else None}))

    def _message(self, event: Any) -> None:
        self._answer = event.content

    def _responded(self, event: Any) -> None:
        chat, self._chat = self._chat, None
        if chat is None:
            return
        usage = event.usage or {}
        chat.set_attributes(_clean({
            "gen_ai.response.finish_reasons": [event.finish_reason] if event.finish_reason else None,
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            "gen_ai.usage.cache_read.input_tokens": usage.get("cached_tokens"),
            "gen_ai.usage.reasoning.output_tokens": usage.get("reasoning_tokens") or None,
        }))
        if self.content and self._answer:
            chat.set_attribute("gen_ai.output.messages",
                               self._text(_messages("assistant", self._answer, event.finish_reason)))
        chat.end()

    def _error(self, event: Any) -> None:
        if self._chat is not None:  # the request failed (a ModelError: its message is the event's)
            self._chat.set_status(Status(StatusCode.ERROR, self._scrub(event.message)))
            self._chat.set_attribute("error.type", "model_error")
            self._chat.end()
            self._chat = None

    # -- tool calls -------------------------------------------------------------------------------------

    def _tool_called(self, event: Any) -> None:
        span = self.tracer.start_span(
            f"execute_tool {event.name}", context=self._in_run(), kind=SpanKind.INTERNAL,
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.name,
                        "gen_ai.tool.call.id": event.id, "gen_ai.tool.type": "function"})
        if self.content:
            arguments = event.arguments
            secrets = self._secrets_of(arguments)
            shown = json.dumps(redact(arguments), ensure_ascii=False, default=str) if isinstance(arguments, dict) \
                else str(arguments)
            span.set_attribute("gen_ai.tool.call.arguments", self._text(shown, secrets))
        self._tools[event.id] = span

    def _tool_decided(self, event: Any) -> None:
        span = self._tools.get(event.id)
        if span is None:
            return
        span.set_attributes(_clean({"nami.decision": event.action, "nami.decision.source": event.source,
                                    "nami.tool.risk": event.risk, "nami.tool.kind": event.kind,
                                    "nami.target": event.target, "nami.sandboxed": event.sandboxed}))
        if event.trace is not None:  # what the call starts (a process, an MCP request, a sub-agent) joins here
            event.trace.clear()
            PROPAGATOR.inject(event.trace, context=trace.set_span_in_context(span))

    def _approval(self, event: Any) -> None:
        span = self._tools.get(event.id)
        if span is None:
            return
        span.add_event("nami.approval" if event.approved else "nami.refusal", _clean({
            "nami.approved": event.approved, "nami.decision.source": event.source,
            "nami.decision.reason": self._scrub(event.reason) if event.reason else None}))

    def _tool_result(self, event: Any) -> None:
        span = self._tools.pop(event.id, None)
        if span is None:
            return
        details = event.details or {}
        span.set_attributes(_clean({
            "nami.tool.ok": event.ok, "process.exit.code": details.get("exit_code"),
            "nami.tool.timed_out": details.get("timed_out") or None,
            "nami.tool.interrupted": details.get("interrupted") or None,
            "nami.tool.denied": details.get("denied") or None,
            "nami.tool.not_run": details.get("not_run") if isinstance(details.get("not_run"), str) else None,
            "nami.sandbox.blocked": bool(details.get("sandbox_failure")) or None,
            "nami.subagent.session": details.get("session") if details.get("agent") else None,
            "nami.audit.record": details.get("audit_record"),
        }))
        self._audit_head = details.get("audit_record") or self._audit_head
        if self.content:
            span.set_attribute("gen_ai.tool.call.result", self._text(event.content))
        if not event.ok:
            kind = ("denied" if details.get("denied") else "timed_out" if details.get("timed_out")
                    else "interrupted" if details.get("interrupted") else "tool_error")
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, kind))
        span.end()

    # -- helpers ----------------------------------------------------------------------------------------

    def _in_run(self) -> Context | None:
        return trace.set_span_in_context(self._run) if self._run is not None else None

    def _end_open(self, why: str) -> None:
        """Spans a run leaves open (interrupted, stopped by a hook) end with it, marked."""
        for span in [*self._tools.values(), *([self._chat] if self._chat is not None else [])]:
            span.set_status(Status(StatusCode.ERROR, self._scrub(why)))
            span.end()
        self._tools.clear()
        self._chat = None

    def _secrets_of(self, arguments: Any) -> list[str]:
        named = secret_values(arguments) if isinstance(arguments, dict) else []
        return sorted({*named, *self.secrets}, key=len, reverse=True) if named else self.secrets

    def _scrub(self, text: str) -> str:
        return scrub_text(text, self.secrets)

    def _text(self, text: str, secrets: list[str] | None = None) -> str:
        shown = scrub_text(text, self.secrets if secrets is None else secrets)
        return shown if len(shown) <= MAX_CONTENT else shown[:MAX_CONTENT] + f"… [{len(shown):,} characters]"


def _messages(role: str, text: str, finish_reason: str | None) -> str:
    """GenAI semantic conventions' ``gen_ai.output.messages`` for one text answer."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}],
                        "finish_reason": finish_reason or "stop"}], ensure_ascii=False)


def _port(address: Any) -> int | None:
    try:
        return address.port or (443 if address.scheme == "https" else 80)
    except ValueError:
        return None


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes without the unknown ones (OpenTelemetry refuses None)."""
    return {key: value for key, value in attributes.items() if value is not None}
