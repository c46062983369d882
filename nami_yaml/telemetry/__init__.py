"""OpenTelemetry traces of nami's runs: a subscriber of the loop's events (nami_yaml/agent/events.py) that
turns them into spans by the GenAI semantic conventions and sends them over OTLP/HTTP.

Optional (the ``otel`` extra) and off unless switched on (agent.yaml ``telemetry:`` or the standard
OTEL_EXPORTER_OTLP_* variables): :mod:`.switch` decides that without importing OpenTelemetry, and only a
run that is traced imports :mod:`.spans`, which does. Nothing here is imported by the loop.
"""
