"""What an MCP server's tools and results become in nami, against the fixture server as a real process:
real-world schemas (defaults that are documentation), binary results, and error results."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.programs import need_mcp

need_mcp()

from nami_yaml.mcp.results import binary_note  # noqa: E402
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


def test_binary_data_reaches_the_model_as_a_short_note(workdir: Path, ctx: RuntimeContext) -> None:
    """An image, base64 in structuredContent or in a JSON text, a data: URI: ~50 KB of base64 each, which
    the model cannot use and which would fill its context. Each becomes a note saying what it was."""
    with servers(workdir, fixture_spec("fx", "--binary")) as running:
        running.start()
        executor = Executor(Registry(running.tools()), ctx)
        results = {name: executor.execute(f"fx__{name}", {}) for name in ("picture", "chart", "report", "thumbnail")}
    assert all(result.ok for result in results.values())
    assert results["picture"].content == "[image image/png, 37,500 bytes: not shown]"
    assert json.loads(results["chart"].content) == {
        "title": "Sales", "png": "[base64 data, image/png, 37,500 bytes: not shown]", "points": 12}
    assert json.loads(results["report"].content) == {
        "name": "q3.pdf", "pages": 4, "content": "[base64 data, application/pdf, 20,009 bytes: not shown]"}
    assert results["thumbnail"].content == "[data: URI, image/png, 37,500 bytes: not shown]"


def test_an_error_result_of_a_server_is_marked_as_an_error(workdir: Path, ctx: RuntimeContext) -> None:
    with servers(workdir, fixture_spec()) as running:
        running.start()
        executor = Executor(Registry(running.tools()), ctx)
        failed = executor.execute("fx__fail", {})
        fine = executor.execute("fx__echo", {"text": "Error: is just a word here"})
    assert (failed.ok, failed.content) == (False, "Error: it went wrong")  # as nami's own failed results
    assert (fine.ok, fine.content) == (True, "Error: is just a word here")


@pytest.mark.parametrize("text", [
    "\n".join(f"line {n}" for n in range(2000)),  # every character a base64 one, and still text
    "\n".join(f"line{n:04d}" for n in range(2000)),
    "a" * 5000,
    "".join(hashlib.sha256(str(n).encode()).hexdigest() for n in range(40)),  # digests are for the model
    base64.b64encode(b"plain words, base64-encoded. " * 100).decode(),  # encoded text is not binary data
    base64.b64encode(os.urandom(600)).decode(),  # short: a key, a token
])
def test_text_that_looks_like_base64_stays_text(text: str) -> None:
    assert binary_note(text) is None


def test_wrapped_and_url_safe_base64_is_binary_data() -> None:
    data = os.urandom(3000)
    for encoded in (base64.encodebytes(data).decode(), base64.urlsafe_b64encode(data).decode().rstrip("=")):
        assert binary_note(encoded) == "[base64 data, binary, 3,000 bytes: not shown]"
