"""A traced batch: one span for the batch, and one trace per task (each run in a worker process of its own)
linked to it, received by a real OTLP/HTTP receiver."""

from __future__ import annotations

import pytest

from tests.programs import need_otel

need_otel()

from nami_yaml.testing import text  # noqa: E402
from tests.batch.conftest import BatchProject  # noqa: E402
from tests.telemetry.receiver import otlp_receiver  # noqa: E402


def test_each_task_is_a_trace_of_its_own_linked_to_the_batch(batch_project: BatchProject,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = []
    for n in range(2):
        batch_project.server.add_task(f"[b{n}]", text(f"answer {n}"))
        tasks.append({"id": f"b{n}", "prompt": f"[b{n}] task {n}"})
    tasks_file = batch_project.tasks(tasks)
    with otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        result, rows = batch_project.run(str(tasks_file), "--workers", "2")
    assert result.exit_code == 0, result.output
    assert len(rows) == 2
    batch = receiver.one("batch tasks.yaml")
    assert batch.parent_id == "" and batch.attributes["nami.batch.tasks"] == 2
    runs = receiver.named("invoke_agent nami")
    assert len(runs) == 2
    assert len({run.trace_id for run in runs} | {batch.trace_id}) == 3  # a trace per task, and the batch's
    for run in runs:
        assert run.parent_id == "" and run.links == [(batch.trace_id, batch.span_id)]
        [chat] = [s for s in receiver.named("chat fake-model") if s.trace_id == run.trace_id]
        assert chat.parent_id == run.span_id
