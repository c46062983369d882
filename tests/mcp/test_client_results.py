"""What an MCP server's tools and results become in nami, against the fixture server as a real process:
real-world schemas (defaults that are documentation), binary results, and error results."""

from __future__ import annotations

import json
from pathlib import Path

from tests.programs import need_mcp

need_mcp()

from nami_yaml.registry.executor import Executor, PreparedToolCall  # noqa: E402
from nami_yaml.registry.registry import Registry  # noqa: E402
from nami_yaml.runtime import RuntimeContext  # noqa: E402
from tests.mcp.helpers import fixture_spec, servers  # noqa: E402

SCHEMAS = Path(__file__).resolve().parent.parent / "registry" / "bfcl_style.yaml"
NOT_APPLIED = "nami does not apply it, so a call that leaves it out passes no value"


def test_real_world_schemas_all_load_and_refused_defaults_are_warned_about(workdir: Path, ctx: RuntimeContext) -> None:
    with servers(workdir, fixture_spec("api", "--schemas", str(SCHEMAS))) as running:
        running.start()
        tools = running.tools()
        notices = running.take_notices()
        executor = Executor(Registry(tools), ctx)
        results = {
            name: executor.execute(name, arguments) for name, arguments in [
                ("api__get_current_weather", {"location": "Oslo"}),
                ("api__find_restaurants", {"location": "Denver, CO"}),
                ("api__book_flight", {"origin": "OSL", "destination": "CPH", "date": "2025-05-01"}),
            ]}
    assert len(tools) == 7  # default: null and refused defaults alike: every tool is there
    assert notices == [
        "MCP server api: tool 'find_restaurants': $.inputSchema.properties.cuisine.default: warning: default \"N/A\" "
        "is not valid for this parameter: \"N/A\" is not one of: \"Italian\", \"Chinese\", \"Mexican\", "
        f"\"Indian\", \"Japanese\"; {NOT_APPLIED}",
        "MCP server api: tool 'book_flight': $.inputSchema.properties.nonstop.default: warning: default \"false\" is "
        f"not valid for this parameter: expected boolean, got string \"false\"; {NOT_APPLIED}",
        "MCP server api: tool 'hotel_booking': $.inputSchema.properties.amenities.default: warning: default "
        f"\"WiFi\" is not valid for this parameter: expected array, got string \"WiFi\"; {NOT_APPLIED}",
    ]
    # What the server got: no null for a null default, no refused default, the valid default.
    received = {name: json.loads(result.content) for name, result in results.items()}
    assert received == {
        "api__get_current_weather": {"location": "Oslo"},
        "api__find_restaurants": {"location": "Denver, CO"},
        "api__book_flight": {"origin": "OSL", "destination": "CPH", "date": "2025-05-01", "passengers": 1},
    }


def test_the_model_is_sent_the_server_schema_as_it_is(workdir: Path, ctx: RuntimeContext) -> None:
    with servers(workdir, fixture_spec("api", "--schemas", str(SCHEMAS))) as running:
        running.start()
        executor = Executor(Registry(running.tools()), ctx)
        prepared = executor.prepare("api__find_restaurants", {"location": "Rome", "cuisine": "Italian"})
    sent = {d["function"]["name"]: d["function"]["parameters"] for d in executor.definitions()}
    assert sent["api__find_restaurants"]["properties"]["cuisine"]["default"] == "N/A"
    assert sent["api__get_current_weather"]["properties"]["unit"]["default"] is None
    assert isinstance(prepared, PreparedToolCall) and prepared.arguments == {"location": "Rome", "cuisine": "Italian"}
