"""MCP servers that attack nami's client, as real processes: a tool list that pages forever or is huge, a
flood on stderr, and tool names that two servers share."""

from __future__ import annotations

from pathlib import Path

from tests.programs import need_mcp

need_mcp()

from nami_yaml.cancel import CancelToken  # noqa: E402
from nami_yaml.mcp.client import MAX_DESCRIPTION, MAX_LOG_BYTES, MAX_TOOLS  # noqa: E402
from tests.mcp.helpers import fixture_spec, servers  # noqa: E402


def test_a_tool_list_that_pages_forever_fails_at_once_saying_so(workdir: Path) -> None:
    with servers(workdir, fixture_spec("endless", "--endless-list", startup_timeout=60)) as running:
        running.start()
        notices = running.take_notices()
        assert running.connections["endless"].state == "failed"
    assert len(notices) == 1 and "did not start" in notices[0]
    assert f"more than {MAX_TOOLS:,} tools" in notices[0] and "startup_timeout" not in notices[0]


def test_a_huge_tool_list_fails_saying_so(workdir: Path) -> None:
    with servers(workdir, fixture_spec("many", "--many-tools", str(MAX_TOOLS + 1))) as running:
        running.start()
        notices = running.take_notices()
        assert running.tools() == []
    assert len(notices) == 1 and f"more than {MAX_TOOLS:,} tools" in notices[0]


def test_a_list_at_the_limit_is_taken(workdir: Path) -> None:
    with servers(workdir, fixture_spec("many", "--many-tools", str(MAX_TOOLS))) as running:
        running.start()
        assert len(running.tools()) == MAX_TOOLS



def test_a_flood_on_stderr_is_capped_in_its_log_and_the_server_still_answers(workdir: Path) -> None:
    flood = 5 * MAX_LOG_BYTES
    with servers(workdir, fixture_spec("noisy", "--stderr-flood", str(flood))) as running:
        running.start()
        echo = running.call_tool("noisy", "echo", {"text": "hi"}, timeout=60, cancel=CancelToken())
        log = running.connections["noisy"].log_path
    assert (echo.text, echo.ok) == ("hi", True)
    assert log is not None
    size = log.stat().st_size
    assert MAX_LOG_BYTES // 2 < size <= MAX_LOG_BYTES + 1000
    assert b"nami: the rest of this server's output was dropped" in log.read_bytes()[-1000:]


def test_descriptions_are_cut_and_huge_schemas_left_out(workdir: Path) -> None:
    """Every request carries every tool's description and schema: a server cannot make them megabytes."""
    long = fixture_spec("long", "--tool-names", "wordy", "--description", "word " * 10_000)
    wide = fixture_spec("wide", "--huge-schema", "2000")
    with servers(workdir, long, wide) as running:
        running.start()
        tools = {tool.name: tool for tool in running.tools()}
        notices = running.take_notices()
    assert len(tools["long__wordy"].description) == MAX_DESCRIPTION + 1
    assert "wide__wide" not in tools and "wide__echo" in tools  # the server's other tools still join
    assert any("description of long__wordy was cut" in n for n in notices)
    assert any("'wide' left out: its inputSchema is" in n and "characters as JSON" in n for n in notices)


def test_a_schema_whose_ref_comes_back_to_itself_leaves_its_tool_out(workdir: Path) -> None:
    """Validating the model's arguments against it would recurse until Python gives up."""
    with servers(workdir, fixture_spec("cyc", "--cyclic-schema")) as running:
        running.start()
        tools = {tool.name for tool in running.tools()}
        notices = running.take_notices()
    assert "cyc__loop" not in tools and "cyc__echo" in tools
    assert any("'loop' left out" in n and "comes back to itself" in n for n in notices), notices
