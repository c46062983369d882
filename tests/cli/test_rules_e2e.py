"""Issue 23's command rules through the real CLI: a `nami` process whose model (the fake server) sends bash
calls that once ran what the rules did not allow, or ran a denied program once approved."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.cli.test_run_cli import tool_messages
from tests.helpers import run_nami


def project(workdir: Path, rules: str) -> Path:
    """A trusted project with the bash tool, these rules, and a folder victim/ the attacks aim at."""
    (workdir / "agent.yaml").write_text(f"tools: {{builtin: [bash]}}\nrules:\n{rules}")
    (workdir / "victim").mkdir()
    (workdir / "victim" / "x").write_text("precious\n")
    trusted = run_nami(None, "trust", "--yes", cwd=workdir)
    assert trusted.returncode == 0, trusted.stderr
    return workdir / "victim" / "x"


def bash_calls(server: FakeOpenAIServer, *commands: str) -> None:
    server.add(*(tool_calls(call("bash", {"command": c})) for c in commands), text("done"))


def results(server: FakeOpenAIServer) -> list[str]:
    return [m["content"] for m in tool_messages(server.requests[-1])]


def test_a_builtin_hiding_code_under_an_allow_is_asked_about_not_run(fake_openai: FakeOpenAIServer,
                                                                     workdir: Path) -> None:
    victim = project(workdir, "  - tool: bash\n    command: [test, printf, ls]\n    decision: allow\n")
    bash_calls(fake_openai, "printf -v 'BASH_CMDS[ls]' %s /bin/rm; ls -rf victim",
               "hash -p /bin/rm ls; ls -rf victim", "test -v 'a[$(rm victim/x; id > pwned)]'")
    result = run_nami(fake_openai, "run", "tidy up", cwd=workdir)  # no terminal and no --yes: a question is a no
    assert result.returncode == 0, result.stderr
    assert victim.exists() and not (workdir / "pwned").exists()
    answers = results(fake_openai)
    assert len(answers) == 3
    assert all(a.startswith("Denied by no approver: ") and "command rules (agent.yaml) asks" in a for a in answers)


def test_an_option_that_runs_a_denied_program_is_denied_even_with_yes(fake_openai: FakeOpenAIServer,
                                                                      workdir: Path) -> None:
    victim = project(workdir, "  - tool: bash\n    command: [rg]\n    decision: allow\n"
                              "  - tool: bash\n    command: [sh]\n    decision: deny\n")
    (workdir / "notes").write_text("rm -rf victim\n")
    bash_calls(fake_openai, "rg --pre=sh . notes")
    result = run_nami(fake_openai, "run", "--yes", "search the notes", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert victim.exists()
    [answer] = results(fake_openai)
    assert answer.startswith("Denied by rule agent.yaml:6:5: "), answer


@pytest.mark.parametrize("approval", [["--yes"], ["--approve", "exec"]])
def test_a_computed_program_name_under_a_deny_is_denied_whatever_approves(fake_openai: FakeOpenAIServer,
                                                                          workdir: Path, approval: list[str]) -> None:
    victim = project(workdir, "  - tool: bash\n    command: [rm]\n    decision: deny\n"
                              "  - tool: bash\n    command: [ls]\n    decision: allow\n")
    bash_calls(fake_openai, "$(printf rm) -rf victim", "x=rm; $x -rf victim")
    result = run_nami(fake_openai, "run", *approval, "clean up", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert victim.exists()
    answers = results(fake_openai)
    assert len(answers) == 2 and all(a.startswith("Denied by rule agent.yaml:3:5: ") for a in answers), answers


def test_tools_call_with_yes_does_not_run_a_denied_computed_program(workdir: Path) -> None:
    victim = project(workdir, "  - tool: bash\n    command: [rm]\n    decision: deny\n")
    result = run_nami(None, "tools", "call", "bash", "command=x=rm; $x -rf victim", "--yes", cwd=workdir)
    assert result.returncode == 1
    assert victim.exists()
    assert "denied by rule agent.yaml:3:5" in result.stdout + result.stderr


def test_mcp_serve_with_approve_exec_does_not_run_a_denied_computed_program(workdir: Path, tmp_path: Path) -> None:
    """Another agent's calls over MCP, with --approve exec answering every question yes."""
    from tests.programs import need_mcp

    need_mcp()
    import anyio

    from tests.mcp.helpers import stdio_session, text_of

    victim = project(workdir, "  - tool: bash\n    command: [rm]\n    decision: deny\n")

    async def scenario() -> list[str]:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "--builtins", "--approve", "exec"], workdir, errlog) as session:
                return [text_of(await session.call_tool("bash", {"command": c}))
                        for c in ("$(printf rm) -rf victim", "x=rm; $x -rf victim", "echo ran")]

    computed, assigned, plain = anyio.run(scenario)
    assert victim.exists()
    assert computed.startswith("Error: refused by rule agent.yaml:3:5") and assigned.startswith(
        "Error: refused by rule agent.yaml:3:5"), (computed, assigned)
    assert "ran" in plain  # --approve exec still answers what is only asked
