"""``nami mcp serve`` asks the client's user through MCP elicitation (the official SDK's client) where the
client declares it: a yes runs the call, a no (with its reason) refuses it; a client without it keeps the
refusal naming the rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.programs import need_mcp

need_mcp()

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402

from tests.helpers import write  # noqa: E402
from tests.mcp.helpers import stdio_session, text_of  # noqa: E402

MARKER = """\
name: make_marker
description: Create a marker file.
risk: write
parameters: {type: object, properties: {name: {type: string}}, required: [name]}
command: [touch, "{name}"]
"""


def project_at(workdir: Path) -> Path:
    write(workdir / "tools" / "marker.yaml", MARKER)
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools/]}\n")
    return workdir


def serve_and_call(project: Path, errlog_path: Path, answer: Any, name: str, *, tool: str = "make_marker",
                   arguments: dict[str, Any] | None = None) -> tuple[types.CallToolResult, list[str]]:
    """One call served (make_marker of ``name``, else ``tool`` with ``arguments``); the questions asked."""
    asked: list[str] = []

    async def elicited(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return answer

    async def scenario() -> types.CallToolResult:
        with open(errlog_path, "w") as errlog:
            async with stdio_session(["mcp", "serve", "--config", "agent.yaml"], project, errlog,
                                     elicitation_callback=elicited if answer is not None else None) as session:
                return await session.call_tool(tool, arguments if arguments is not None else {"name": name})

    return anyio.run(scenario), asked


def test_the_clients_user_approves_through_elicitation(workdir: Path, tmp_path: Path) -> None:
    project = project_at(workdir)
    yes = types.ElicitResult(action="accept", content={"approve": True})
    result, asked = serve_and_call(project, tmp_path / "err", yes, "yes.txt")
    assert not result.is_error, text_of(result)
    assert (project / "yes.txt").exists()
    [question] = asked
    assert question.startswith("write tool make_marker wants to run:\n  touch yes.txt")
    assert "(asked by permissions.write)" in question and question.endswith("Run it?")


def test_a_no_with_a_reason_refuses_and_says_why(workdir: Path, tmp_path: Path) -> None:
    project = project_at(workdir)
    no = types.ElicitResult(action="accept", content={"approve": False, "reason": "not on Fridays"})
    result, _ = serve_and_call(project, tmp_path / "err", no, "no.txt")
    assert result.is_error and "not on Fridays" in text_of(result) and "MCP elicitation" in text_of(result)
    assert not (project / "no.txt").exists()
    declined = types.ElicitResult(action="decline")
    result, _ = serve_and_call(project, tmp_path / "err", declined, "declined.txt")
    assert result.is_error and "permissions.write asks" in text_of(result) and "declined" in text_of(result)


def test_a_client_without_elicitation_keeps_the_refusal(workdir: Path, tmp_path: Path) -> None:
    project = project_at(workdir)
    result, asked = serve_and_call(project, tmp_path / "err", None, "never.txt")
    assert asked == [] and result.is_error
    assert "nobody can be asked over MCP" in text_of(result) and "permissions.write" in text_of(result)
    assert not (project / "never.txt").exists()
