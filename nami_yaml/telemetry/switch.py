"""Whether runs are traced, and where to: from agent.yaml ``telemetry:`` and the standard OpenTelemetry
variables, without importing OpenTelemetry (a run that is not traced must not pay for it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from nami_yaml.config.sections import TelemetrySettings

TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"  # the traces URL itself
ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"  # the collector's base URL: traces go to its /v1/traces
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
HTTP_PROTOBUF = "http/protobuf"
TRACES_PATH = "/v1/traces"
EXTRA_MISSING = ("runs are not traced: the OpenTelemetry packages are not installed "
                 "(pip install 'nami_yaml[otel]')")


@dataclass(frozen=True)
class Tracing:
    """Runs are traced: spans go to ``endpoint`` (the OTLP/HTTP traces URL) as ``service_name`` (None:
    OTEL_SERVICE_NAME's), with ``resource_attributes`` added; ``content``: the spans carry the model's
    answers and the calls' arguments and output (redacted)."""

    endpoint: str
    service_name: str | None
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    content: bool = False


@dataclass(frozen=True)
class NotTraced:
    """Tracing was asked for but cannot be done; ``why`` is the notice the person gets."""

    why: str


def choose(settings: TelemetrySettings, env: Mapping[str, str]) -> Tracing | NotTraced | None:
    """What ``settings`` (the effective ``telemetry:``) and ``env`` (the OTEL_* variables) ask for: tracing,
    a notice why it cannot be (an unsupported protocol), or None (off: nothing is imported)."""
    if settings.enabled is False or _true(env.get("OTEL_SDK_DISABLED")):
        return None
    endpoint = traces_url(settings.endpoint, env)
    named_here = settings.endpoint is not None
    if settings.enabled == "auto" and not named_here and (
            not endpoint or env.get("OTEL_TRACES_EXPORTER", "").strip() == "none"):
        return None
    if not endpoint:
        return NotTraced("runs are not traced: telemetry.enabled is true, but no collector is named "
                         f"(telemetry.endpoint, ${ENDPOINT} or ${TRACES_ENDPOINT})")
    for variable in PROTOCOL_VARIABLES:
        protocol = env.get(variable, "").strip()
        if protocol and protocol != HTTP_PROTOBUF:
            return NotTraced(f"runs are not traced: nami sends traces over OTLP/HTTP ({HTTP_PROTOBUF}), and "
                             f"${variable} is {protocol!r}; set it to {HTTP_PROTOBUF} (port 4318, not gRPC's 4317)")
        if protocol:
            break
    service = None if env.get("OTEL_SERVICE_NAME") else settings.service_name
    return Tracing(endpoint, service, dict(settings.resource_attributes), settings.content)


def traces_url(endpoint: str | None, env: Mapping[str, str]) -> str | None:
    """The URL spans are posted to: telemetry.endpoint's /v1/traces, else $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    as it is, else $OTEL_EXPORTER_OTLP_ENDPOINT's /v1/traces (the OTLP exporter's own rule)."""
    if endpoint:
        return endpoint.rstrip("/") + TRACES_PATH
    if env.get(TRACES_ENDPOINT, "").strip():
        return env[TRACES_ENDPOINT].strip()
    base = env.get(ENDPOINT, "").strip()
    return base.rstrip("/") + TRACES_PATH if base else None


def trust_lines(project_values: Mapping[str, object] | None) -> list[str]:
    """For the trust summary: what a project's ``telemetry:`` (``project_values``, as its agent.yaml writes it)
    would do once trusted. Where its runs go is the point: a collector of the repository's choosing."""
    if not isinstance(project_values, Mapping) or not project_values:
        return []
    lines = [f"  sets telemetry.{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in project_values.items()]
    endpoint = project_values.get("endpoint")
    if project_values.get("enabled") is not False and isinstance(endpoint, str):
        shown = "with prompts, arguments and output" if project_values.get("content") is True else "without text"
        lines.append(f"  sends a trace of every run ({shown}) to {endpoint.rstrip('/')}{TRACES_PATH}")
    return lines


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"
