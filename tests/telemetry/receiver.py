"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the telemetry tests: what arrives is decoded with the
official protobuf definitions (opentelemetry-proto), as a collector would decode it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.local_http import QuietHandler, serving


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str]]
    status: int
    status_message: str
    resource: dict[str, Any]
    start: int = 0  # nanoseconds since the epoch


@dataclass
class Receiver:
    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of each export request, lower-cased names
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> ReceivedSpan:
        [span] = self.named(name)
        return span

    def take(self, body: bytes, headers: dict[str, str], path: str) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(ReceivedSpan(
                        span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), span.kind,
                        {kv.key: value_of(kv.value) for kv in span.attributes},
                        [(event.name, {kv.key: value_of(kv.value) for kv in event.attributes}) for event in span.events],
                        [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                        span.status.code, span.status.message, resource, span.start_time_unix_nano))
        with self.lock:
            self.spans.extend(found)
            self.headers.append(headers)
            self.paths.append(path)


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """Serve OTLP/HTTP (protobuf) while the block runs; the spans received so far are in ``.spans``."""
    receiver = Receiver()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            receiver.take(body, {k.lower(): v for k, v in self.headers.items()}, self.path)
            self.reply(200, ExportTraceServiceResponse().SerializeToString(),
                       {"Content-Type": "application/x-protobuf"})

    with serving(Handler) as url:
        receiver.url = url
        yield receiver
