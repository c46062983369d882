"""``sandbox:`` in agent.yaml, the user config, tool files and MCP servers: validated with did-you-mean, and
the user's and the project's combined (the stricter of two values; lists add up); what trust shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.sandbox import DeclaredNeeds, combine, sandbox_settings, trust_lines
from nami_yaml.config.settings import load_settings
from nami_yaml.errors import SpecError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.loader import check_tools
from nami_yaml.sandbox_settings import SandboxNeeds, SandboxSettings


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def settings(home: Path, workdir: Path, user: str | None, project: str | None) -> SandboxSettings:
    if user is not None:
        write(home / ".config" / "nami" / "config.yaml", user)
    if project is not None:
        write(workdir / "agent.yaml", project)
    effective = load_settings(ProjectRequest(env={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}, cwd=workdir))
    return sandbox_settings(effective.get("sandbox"))


def test_the_defaults(temp_home: Path, workdir: Path) -> None:
    assert settings(temp_home, workdir, None, None) == SandboxSettings()


def test_a_project_narrows_and_widens_only_what_the_user_left_unset(temp_home: Path, workdir: Path) -> None:
    narrowed = settings(temp_home, workdir, "sandbox: {mode: auto, network: true}\n",
                        "sandbox: {mode: required, network: false, escalate: never}\n")
    assert (narrowed.mode, narrowed.network, narrowed.escalate) == ("required", False, "never")
    kept = settings(temp_home, workdir, "sandbox: {mode: required}\n", "sandbox: {mode: off, network: true}\n")
    assert (kept.mode, kept.network) == ("required", True)  # network: the user said nothing about it


def test_the_user_may_widen_and_lists_add_up(temp_home: Path, workdir: Path) -> None:
    widened = settings(temp_home, workdir, "sandbox: {mode: off, hide: [~/.vault-token], writable: [~/.cache/go]}\n",
                       "sandbox: {hide: [~/.acme], writable: [/srv/build]}\n")
    assert widened.mode == "off"
    assert widened.hide == ("~/.vault-token", "~/.acme")
    assert widened.writable == ("~/.cache/go", "/srv/build")


def test_relative_paths_are_relative_to_the_file(temp_home: Path, workdir: Path) -> None:
    found = settings(temp_home, workdir, None, "sandbox: {writable: [build/cache, ~/x, $HOME/y]}\n")
    assert found.writable == (str(workdir / "build" / "cache"), "~/x", "$HOME/y")


def test_combine_keeps_the_stricter_value() -> None:
    assert combine({"mode": "off"}, {"mode": "read-only"})["mode"] == "read-only"
    assert combine({"mode": "read-only"}, {"mode": "auto"})["mode"] == "read-only"
    assert combine(None, None) == SandboxSettings().as_mapping()


@pytest.mark.parametrize(("text", "message"), [
    ("sandbox: {mdoe: off}\n", "unknown key 'mdoe'; did you mean 'mode'?"),
    ("sandbox: {mode: of}\n", "\"of\" is not one of: \"auto\", \"required\", \"read-only\", \"off\", false; did you mean 'off'?"),
    ("sandbox: {network: yes please}\n", "expected boolean"),
    ("sandbox: {writeable: [x]}\n", "unknown key 'writeable'; did you mean 'writable'?"),
])
def test_agent_yaml_keys_are_checked(temp_home: Path, workdir: Path, text: str, message: str) -> None:
    write(workdir / "agent.yaml", text)
    with pytest.raises(SpecError) as raised:
        load_settings(ProjectRequest(env={"HOME": str(temp_home)}, cwd=workdir))
    assert any(message in problem.message for problem in raised.value.problems), raised.value.problems


def test_tool_file_keys_are_checked_and_loaded(tmp_path: Path) -> None:
    good = write(tmp_path / "tools" / "kube.yaml", "name: k\ndescription: d\ncommand: [kubectl, get, pods]\n"
                                                   "sandbox: {network: true, reads: [~/.kube/config]}\n")
    tools, problems = check_tools([good])
    assert [p for p in problems if p.is_error] == []
    needs = tools[0].runner.options.sandbox  # type: ignore[attr-defined]
    assert (needs.network, needs.reads) == (True, ("~/.kube/config",)) and needs.origin.endswith("kube.yaml")
    bad = write(tmp_path / "tools" / "bad.yaml", "name: b\ndescription: d\ncommand: [true]\nsandbox: {netwrok: true}\n")
    _, problems = check_tools([bad])
    assert any("unknown key 'netwrok'; did you mean 'network'?" in p.message for p in problems)


def test_an_mcp_server_has_its_own_keys(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "mcp_servers:\n  docs: {command: npx, args: [-y, docs-server], "
                                  "sandbox: {network: true, writable: [~/.npm]}}\n")
    effective = load_settings(ProjectRequest(env={"HOME": str(temp_home)}, cwd=workdir))
    [spec] = server_specs(effective)
    assert spec.sandbox.network and spec.sandbox.writable == ("~/.npm",)
    write(workdir / "agent.yaml", "mcp_servers:\n  web: {url: 'http://127.0.0.1:1/mcp', sandbox: {network: true}}\n")
    with pytest.raises(SpecError, match="sandbox is for stdio servers"):
        load_settings(ProjectRequest(env={"HOME": str(temp_home)}, cwd=workdir))


def test_trust_lines_show_what_widens_the_sandbox() -> None:
    declared = [DeclaredNeeds("web_get", "tools/web.yaml:1:1", SandboxNeeds(network=True, reads=("~/.netrc",))),
                DeclaredNeeds("count", "tools/count.yaml:1:1", SandboxNeeds())]
    lines = trust_lines({"mode": "off", "writable": ["~/.cache/go"]}, declared)
    assert lines == ["  widens the sandbox of every call:", "    mode: off (its tools run without the sandbox)",
                     "    writable: ~/.cache/go", "  tools that need more than the sandbox gives:",
                     "    web_get (tools/web.yaml:1:1): the network; reads ~/.netrc"]
    assert trust_lines({"mode": "required", "hide": ["~/.x"]}, []) == []
