"""The bash built-in with real shells: workspace cwd, scrubbed env, timeouts and their cap, capped output."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins.shell import bash
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext, ToolSettings
from tests.sandboxing import gone


def with_settings(ctx: RuntimeContext, **settings: float | int) -> RuntimeContext:
    return replace(ctx, settings=replace(ctx.settings, **settings))


def test_runs_in_the_workspace_and_reports_output(ctx: RuntimeContext) -> None:
    (ctx.workspace / "marker.txt").write_text("here\n")
    result = bash("pwd; cat marker.txt; echo oops >&2", ctx=ctx)
    assert result.ok
    assert result.content == f"{ctx.workspace}\nhere\n[stderr]\noops"
    assert result.details["exit_code"] == 0
    assert result.details["timed_out"] is False
    assert result.details["spill_path"] is None


def test_nonzero_exit_is_a_failed_result_with_the_code(ctx: RuntimeContext) -> None:
    result = bash("echo partial; exit 3", ctx=ctx)
    assert not result.ok
    assert result.content == "partial\n[exit code: 3]"
    assert result.details["exit_code"] == 3


def test_secrets_and_protected_variables_are_scrubbed(ctx: RuntimeContext) -> None:
    host = {**os.environ, "OPENAI_API_KEY": "sk-model-key", "DEPLOY_TOKEN": "t0k3n",
            "MODEL_ENDPOINT_AUTH": "protected-value", "HARMLESS_SETTING": "visible"}
    ctx = replace(ctx, host_env=host, protected_env=frozenset({"MODEL_ENDPOINT_AUTH"}))
    result = bash("env", ctx=ctx)
    assert result.ok
    assert "HARMLESS_SETTING=visible" in result.content
    for leaked in ("sk-model-key", "t0k3n", "protected-value"):
        assert leaked not in result.content
    assert "PAGER=cat" in result.content  # the runner's non-interactive defaults apply


def test_stdin_is_closed(ctx: RuntimeContext) -> None:
    result = bash("cat; read line; echo read=$?", ctx=with_settings(ctx, bash_timeout=30))
    assert result.content == "read=1"


def test_default_timeout_kills_the_process_group(ctx: RuntimeContext) -> None:
    ctx = with_settings(ctx, bash_timeout=1)
    marker = f"{30 + os.getpid() % 1000 / 1000:.3f}"  # sleep's argument tells its process apart
    result = bash(f"sleep {marker} & wait", ctx=ctx)
    assert not result.ok
    assert result.details["timed_out"] is True
    assert "timed out after 1 s" in result.content
    # Found by what it runs: in the sandbox, the pid bash sees is one of its own pid namespace.
    assert gone(f"sleep {marker}")


def test_requested_timeout_is_capped_at_the_maximum(ctx: RuntimeContext) -> None:
    ctx = with_settings(ctx, bash_timeout=30, bash_max_timeout=1)
    result = bash("sleep 30", timeout=3600, ctx=ctx)
    assert result.details["timed_out"] is True
    assert result.details["timeout"] == 1 and result.details["timeout_capped"] is True
    assert "[timeout 3600 s was capped to 1 s, the maximum allowed" in result.content


def test_requested_timeout_below_the_maximum_is_used(ctx: RuntimeContext) -> None:
    ctx = with_settings(ctx, bash_timeout=1, bash_max_timeout=600)
    result = bash("sleep 2; echo done", timeout=60, ctx=ctx)
    assert result.ok and result.content == "done"
    assert result.details["timeout"] == 60 and result.details["timeout_capped"] is False


def test_large_output_is_capped_and_spilled(ctx: RuntimeContext) -> None:
    ctx = with_settings(ctx, max_output=2_000)
    result = bash("seq 1 100000", ctx=ctx)
    assert result.ok
    assert len(result.content) < 4_000
    assert result.content.startswith("1\n2\n3\n") and result.content.endswith("99999\n100000")
    spill = Path(result.details["spill_path"])
    assert spill.read_text().splitlines()[-1] == "100000"
    assert spill.parent == ctx.spill_dir


def test_invalid_utf8_output_does_not_crash(ctx: RuntimeContext) -> None:
    result = bash(r"printf '\xff\xfe'; printf 'ok\n'", ctx=ctx)
    assert result.ok
    assert result.content == "\ufffd\ufffdok"


def test_cancel_interrupts(ctx: RuntimeContext) -> None:
    ctx = with_settings(ctx, bash_timeout=60)
    timer = threading.Timer(0.5, ctx.cancel.set)
    timer.start()
    try:
        result = bash("sleep 30", ctx=ctx)
    finally:
        timer.cancel()
    assert not result.ok
    assert "[interrupted]" in result.content


def test_empty_command_and_bad_timeout(ctx: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="empty"):
        bash("   ", ctx=ctx)
    with pytest.raises(ToolError, match="positive"):
        bash("true", timeout=0, ctx=ctx)


def test_settings_defaults_are_the_documented_ones() -> None:
    assert ToolSettings().bash_timeout == 120 and ToolSettings().bash_max_timeout == 600


def test_capped_output_keeps_its_markers_through_the_executor(ctx: RuntimeContext) -> None:
    """The entry-point runner must not cap bash's already capped text again (losing the saved file's path)."""
    from nami_yaml.app.toolset import BUILTIN_DIR
    from nami_yaml.registry.executor import Executor
    from nami_yaml.registry.loader import load_tools
    from nami_yaml.registry.registry import Registry

    # As nami loads it: a built-in, run inside nami (a tool file's entry point would run in a sandboxed child).
    tools, problems = load_tools([BUILTIN_DIR / "bash.yaml"], builtin=[BUILTIN_DIR / "bash.yaml"])
    assert problems == []
    small = with_settings(ctx, max_output=2_000)
    result = Executor(Registry(tools), small).execute("bash", '{"command": "seq 1 100000"}')
    assert result.ok and result.details["truncated"] is True
    assert result.content.count("omitted") == 1 and "bytes omitted" in result.content
    spill = Path(result.details["spill_path"])
    assert f"full output: {spill}" in result.content
    assert spill.read_text().splitlines() == [str(n) for n in range(1, 100001)]


def test_a_command_starting_with_a_dash_is_not_read_as_bash_options(ctx: RuntimeContext) -> None:
    from nami_yaml.builtins.shell import bash

    result = bash("-la; echo after", ctx=ctx)
    assert "after" in result.content and "-la: command not found" in result.content
