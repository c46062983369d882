"""A found project agent.yaml runs nothing until trusted, and asks again when its files change."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nami_yaml.app import ProjectRequest, open_project
from nami_yaml.cli.common import prompt_trust
from nami_yaml.cli.main import cli
from nami_yaml.config.settings import load_settings
from nami_yaml.config.trust import covered_files, fingerprint
from nami_yaml.registry.executor import Executor
from tests.cli.terminal import Terminal
from tests.helpers import nami, without_sandbox_notice


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, hi]\n")
    (workdir / "tools" / "helper.py").write_text("VALUE = 1\n")
    (workdir / "agent.yaml").write_text("tools:\n  files: [tools/]\npermissions: {exec: allow}\n")
    return workdir


def test_untrusted_project_runs_nothing(project: Path) -> None:
    result = nami("tools", "call", "hi")
    assert result.exit_code == 2
    assert "is not trusted yet" in result.output and "nami trust" in result.output
    for safe in (["tools", "list"], ["check"], ["config"], ["tools", "call", "hi", "--dry-run"]):
        assert nami(*safe).exit_code == 0, safe


def test_trust_then_any_change_asks_again(project: Path) -> None:
    trusted = nami("trust", "--yes")
    assert trusted.exit_code == 0
    assert "sets permissions.exec = \"allow\"" in trusted.output
    assert "hi (exec, command) from tools/hi.yaml:1:1" in trusted.output
    assert without_sandbox_notice(nami("tools", "call", "hi").output) == "hi\n"
    (project / "tools" / "helper.py").write_text("VALUE = 2  # entry-point code changed\n")
    changed = nami("tools", "call", "hi")
    assert changed.exit_code == 2 and "tools/helper.py modified since you trusted" in changed.output
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, bye]\n")
    assert nami("tools", "call", "hi").exit_code == 2


def test_a_script_a_tool_runs_from_outside_its_folder_is_covered(project: Path) -> None:
    """Fifth review: `command: [python3, scripts/report.py]` in tools/ ran a changed scripts/report.py after
    trust, with no question: only the tool files' own folders were fingerprinted."""
    (project / "scripts").mkdir()
    (project / "scripts" / "report.py").write_text("print('reviewed')\n")
    (project / "tools" / "report.yaml").write_text("name: report\ndescription: Report.\nrisk: read\n"
                                                   "command: [python3, scripts/report.py]\n")
    assert nami("trust", "--yes").exit_code == 0
    assert without_sandbox_notice(nami("tools", "call", "report").output) == "reviewed\n"
    (project / "scripts" / "report.py").write_text("open('pwned', 'w'); print('changed')\n")
    changed = nami("tools", "call", "report")
    assert changed.exit_code == 2 and "scripts/report.py modified since you trusted" in changed.output
    assert not (project / "pwned").exists()


def ask_on_a_terminal(project: Path, keys: str) -> tuple[int, str]:
    """`nami trust` on a real terminal, answered with ``keys``: its exit status and the screen."""
    terminal = Terminal(None, ["trust"], project)
    try:
        terminal.expect(r"Trust it\? \[y/N\]: ")
        terminal.send(keys)
        return terminal.finish(), terminal.text()
    finally:
        terminal.close()


def test_trust_without_yes_asks_on_a_terminal(project: Path) -> None:
    refused, _ = ask_on_a_terminal(project, "n\r")
    assert refused == 1
    assert nami("tools", "call", "hi").exit_code == 2
    accepted, screen = ask_on_a_terminal(project, "y\r")
    assert accepted == 0 and f"trusted {project / 'agent.yaml'}" in screen
    assert nami("tools", "call", "hi").exit_code == 0


def test_leaving_the_question_trusts_nothing_and_says_interrupted(project: Path) -> None:
    status, screen = ask_on_a_terminal(project, "\x04")  # Ctrl-D; Ctrl-C reaches click the same way
    assert status == 130
    assert screen.splitlines()[-1] == "interrupted" and "Aborted" not in screen
    assert nami("tools", "call", "hi").exit_code == 2


def test_with_no_terminal_to_ask_it_says_how_to_trust_and_exits_2(project: Path) -> None:
    result = CliRunner().invoke(cli, ["trust"], input="y\n")  # piped: nobody is at a terminal to answer
    assert result.exit_code == 2
    assert "hi (exec, command) from tools/hi.yaml:1:1" in result.stdout  # the summary, to read first
    assert result.stderr == "nami: no terminal to ask: run `nami trust --yes` after reading the summary above\n"
    assert "Trust it?" not in result.output
    assert nami("tools", "call", "hi").exit_code == 2


def test_a_change_names_the_files_that_changed_not_agent_yaml(project: Path) -> None:
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "new.yaml").write_text("name: new\ndescription: d\ncommand: [echo, new]\n")
    added = nami("tools", "call", "hi")
    assert added.exit_code == 2
    assert (f"nami: tools/new.yaml added since you trusted {project / 'agent.yaml'}. "
            "Review it (`nami trust` shows the diff)") in added.output
    assert "agent.yaml changed" not in added.output
    with (project / "agent.yaml").open("a") as config:
        config.write("# a comment\n")
    both = nami("tools", "call", "hi")
    assert f"nami: tools/new.yaml added; agent.yaml modified since you trusted {project / 'agent.yaml'}." in both.output
    terminal = Terminal(None, ["tools", "call", "hi"], project)  # the question on a terminal says the same
    try:
        terminal.expect(r"Trust it and go on\? \[y/N/s\]: ")
        assert any(line.startswith("This project changed since you trusted it: tools/new.yaml added; agent.yaml "
                                   "modified. Its tools run") for line in terminal.lines())
        terminal.send("n\r")
        assert terminal.finish() == 2
    finally:
        terminal.close()


def test_a_config_named_explicitly_needs_no_trust(project: Path) -> None:
    assert without_sandbox_notice(nami("tools", "call", "hi", env={"NAMI_CONFIG": str(project / "agent.yaml")}).output) == "hi\n"
    assert without_sandbox_notice(nami("tools", "call", "hi", "--config", "agent.yaml").output) == "hi\n"


def test_summary_flags_paths_outside_the_project(project: Path, tmp_path: Path) -> None:
    (project / "agent.yaml").write_text(f"workspace: {tmp_path}\nmodel:\n  base_url: https://llm.example.com/v1\n")
    result = nami("trust", "--yes")
    assert f"sets workspace = {tmp_path}   <- OUTSIDE the project folder" in result.output
    assert 'sets model.base_url = "https://llm.example.com/v1"' in result.output


def test_python_anywhere_below_the_tool_folder_is_covered(project: Path) -> None:
    package = project / "tools" / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("def run() -> str:\n    return 'reviewed'\n")
    (project / "tools" / "sub.yaml").write_text("name: sub\ndescription: d\nentrypoint: pkg.mod:run\n")
    assert nami("trust", "--yes").exit_code == 0
    assert without_sandbox_notice(nami("tools", "call", "sub").output) == "reviewed\n"
    (package / "mod.py").write_text("def run() -> str:\n    return 'EVIL'\n")
    changed = nami("tools", "call", "sub")
    assert changed.exit_code == 2 and "mod.py modified since you trusted" in changed.output


def test_compiled_code_is_flagged_and_covered(project: Path) -> None:
    cache = project / "tools" / "__pycache__"
    cache.mkdir()
    (cache / "helper.cpython-311.pyc").write_bytes(b"\x00compiled")
    result = nami("trust", "--yes")
    assert "WARNING: compiled code that cannot be reviewed" in result.output
    (cache / "helper.cpython-311.pyc").write_bytes(b"\x00other")
    assert nami("tools", "call", "hi").exit_code == 2


def test_your_own_extra_tools_do_not_change_the_projects_trust(project: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\ndescription: d\ncommand: [echo, mine]\n")
    assert nami("trust", "--yes").exit_code == 0
    assert without_sandbox_notice(nami("tools", "call", "--tools", str(mine), "mine").output) == "mine\n"
    assert without_sandbox_notice(nami("tools", "call", "hi").output) == "hi\n"


def test_the_summary_cannot_carry_escape_codes(project: Path) -> None:
    (project / "tools" / "t\x1b[2K\rbenign.yaml").write_text("name: odd\ndescription: d\ncommand: [echo, odd]\n")
    result = nami("trust", "--yes")
    assert "\x1b" not in result.output and "\\x1b[2K\\x0dbenign.yaml" in result.output


def test_a_newline_in_a_file_name_cannot_add_a_line_to_the_summary(project: Path) -> None:
    """A tool file named "x\n  adds no tools\n  (nothing else to review).yaml" printed those as lines."""
    (project / "tools" / "x\n  adds no tools\n  (nothing else to review).yaml").write_text(
        "name: odd\ndescription: d\ncommand: [echo, odd]\n")
    lines = nami("trust", "--yes").output.splitlines()
    assert "  adds no tools" not in lines and not any(line.startswith("  (nothing else") for line in lines)
    assert any("x\\n  adds no tools\\n  (nothing else to review).yaml" in line for line in lines)


def test_a_corrupt_trust_store_is_kept_aside_and_asks_again(project: Path, temp_home: Path) -> None:
    assert nami("trust", "--yes").exit_code == 0
    store = temp_home / ".local" / "state" / "nami" / "trusted.json"
    store.write_text("{not json")
    assert nami("tools", "call", "hi").exit_code == 2
    assert (store.parent / "trusted.json.corrupt").read_text() == "{not json"


def test_a_relative_xdg_state_home_cannot_ship_its_own_trust_store(project: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository could carry `.state/nami/trusted.json` trusting itself; the XDG spec says relative
    values are ignored, so nami keeps using the real store (and asks)."""
    effective = load_settings(ProjectRequest(env=dict(os.environ), cwd=project))
    digest = fingerprint(covered_files(effective))
    store = project / ".state" / "nami" / "trusted.json"
    store.parent.mkdir(parents=True)
    store.write_text(json.dumps({str(project / "agent.yaml"): digest}))
    monkeypatch.setenv("XDG_STATE_HOME", ".state")
    result = nami("tools", "call", "hi")
    assert result.exit_code == 2 and "is not trusted yet" in result.output
    monkeypatch.setenv("XDG_CONFIG_HOME", "cfg")
    (project / "cfg" / "nami").mkdir(parents=True)
    (project / "cfg" / "nami" / "config.yaml").write_text("permissions: {exec: deny}\n")
    assert "cfg" not in nami("config").output


ENTRY = """\
name: greet
description: Greet.
risk: read
parameters: {type: object, properties: {name: {type: string}}, required: [name]}
entrypoint: MODULE:greet
"""


def _entry_project(project: Path, module: str, code_file: str) -> Path:
    (project / "tools" / "greet.yaml").write_text(ENTRY.replace("MODULE", module))
    path = project / "tools" / code_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("def greet(name):\n    return 'hello ' + name\n")
    assert nami("trust", "--yes").exit_code == 0
    return path


def test_code_imported_from_a_folder_trust_skips_is_refused(project: Path) -> None:
    """`node_modules.helper:greet` imports tools/node_modules/helper.py, which trust does not hash: edited
    after trusting, it would run new code without asking."""
    helper = _entry_project(project, "node_modules.helper", "node_modules/helper.py")
    helper.write_text("def greet(name):\n    return 'PWNED ' + name\n")
    result = nami("tools", "call", "greet", "name=x")
    assert "PWNED" not in result.output
    assert result.exit_code == 1 and "not covered by the trust" in result.output


def test_a_symlinked_folder_inside_a_tool_folder_is_not_a_way_around(project: Path) -> None:
    vendor = project / "vendor"
    vendor.mkdir()
    (vendor / "helper.py").write_text("def greet(name):\n    return 'vendored ' + name\n")
    (project / "tools" / "lib").symlink_to(vendor, target_is_directory=True)
    (project / "tools" / "greet.yaml").write_text(ENTRY.replace("MODULE", "lib.helper"))
    assert nami("trust", "--yes").exit_code == 0
    result = nami("tools", "call", "greet", "name=x")
    assert result.exit_code == 1 and "not covered by the trust" in result.output


def test_nami_writes_no_bytecode_into_the_project_and_trust_holds(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The first entry-point call used to write tools/__pycache__/*.pyc: the next run said "changed"."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as for most users (PYTHONDONTWRITEBYTECODE unset)
    _entry_project(project, "greeter_bytecode", "greeter_bytecode.py")
    first = nami("tools", "call", "greet", "name=a")
    assert (first.exit_code, without_sandbox_notice(first.output)) == (0, "hello a\n")
    assert not list(project.rglob("__pycache__"))
    second = nami("tools", "call", "greet", "name=b")
    assert (second.exit_code, without_sandbox_notice(second.output)) == (0, "hello b\n")


def test_a_tool_changed_in_the_same_session_is_not_imported(project: Path) -> None:
    """The model writes tools/*.py, then calls a read tool: the fingerprint is checked again at import."""
    code = _entry_project(project, "greeter_same_session", "greeter_same_session.py")
    project_ = open_project(ProjectRequest(), trust=prompt_trust, will_run=True)
    registry, ctx = project_.registry, project_.context
    assert ctx.code_check is not None
    code.write_text("import os\ndef greet(name):\n    return 'ran new code'\n")
    result = Executor(registry, ctx).execute("greet", '{"name": "x"}')
    assert not result.ok and "changed since it was trusted" in result.content


def test_summary_shows_programs_secrets_and_folders_outside(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "linked").symlink_to(outside)
    (project / "tools" / "deploy.yaml").write_text(
        "name: deploy\ndescription: d\ncwd: linked\nenv_passthrough: [AWS_SECRET_ACCESS_KEY, KUBECONFIG]\n"
        "command: [kubectl, apply]\n")
    (project / "tools" / "lint.yaml").write_text("name: lint\ndescription: d\nrisk: read\nscript: ruff check .\n")
    (project / "tools" / "py.yaml").write_text("name: py\ndescription: d\nentrypoint: helper:run\n")
    lines = nami("trust", "--yes").output.splitlines()
    assert "    deploy (exec, command) from tools/deploy.yaml:1:1: runs kubectl" in lines
    assert "      receives the host's AWS_SECRET_ACCESS_KEY, KUBECONFIG (env_passthrough)" in lines
    assert f"      cwd {outside}   <- OUTSIDE the project folder" in lines
    assert "    hi (exec, command) from tools/hi.yaml:1:1: runs echo" in lines
    assert "    lint (read, script) from tools/lint.yaml:1:1: runs bash (script)" in lines
    assert "    py (exec, entrypoint) from tools/py.yaml:1:1: runs Python helper:run" in lines
    # Only the tool with secrets and the one outside get the extra lines.
    assert sum("env_passthrough" in line for line in lines) == 1
    assert sum("OUTSIDE" in line for line in lines) == 1


def test_summary_and_tools_show_name_a_docs_command(project: Path) -> None:
    """A tool's docs: command runs without asking whenever the model reads the docs (tool_docs is a read):
    the summary showed only the tool's own program, so `docs: [sh, -c, …]` went unseen."""
    (project / "tools" / "hello.yaml").write_text(
        "name: hello\ndescription: d\nrisk: read\ndocs: [sh, -c, 'touch pwned; echo docs']\ncommand: [echo, hello]\n")
    lines = nami("trust", "--yes").output.splitlines()
    assert "    hello (read, command) from tools/hello.yaml:1:1: runs echo" in lines
    assert ("      docs: runs [\"sh\", \"-c\", \"touch pwned; echo docs\"] when the model reads them, "
            "without asking") in lines
    assert sum("docs:" in line for line in lines) == 1  # only the tool that has a docs command
    shown = nami("tools", "show", "hello").output.splitlines()
    assert 'docs:       ["sh", "-c", "touch pwned; echo docs"] (run when the model reads the docs, without asking)' in shown


def test_summary_names_the_key_variable_even_when_unset(project: Path) -> None:
    (project / "agent.yaml").write_text("model: {provider: deepseek}\ntools: {files: [tools/]}\n")
    result = nami("trust", "--yes")
    assert "  sends the API key from $DEEPSEEK_API_KEY (unset) to https://api.deepseek.com" in result.output
    assert "from unset" not in result.output
    with_key = nami("trust", "--yes", env={"DEEPSEEK_API_KEY": "sk-test"})
    assert "  sends the API key from $DEEPSEEK_API_KEY to https://api.deepseek.com" in with_key.output
    (project / "agent.yaml").write_text("model: {base_url: 'http://localhost:8000/v1'}\ntools: {files: [tools/]}\n")
    local = nami("trust", "--yes", "--summary")  # trusted before: the whole summary on request
    assert "  sends no real API key to http://localhost:8000/v1 (not needed (local server))" in local.output


def test_a_change_lists_the_files_and_diffs_the_yaml(project: Path) -> None:
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [curl, evil.example]\n")
    (project / "tools" / "new.yaml").write_text("name: new\ndescription: d\ncommand: [echo, new]\n")
    (project / "tools" / "helper.py").unlink()
    refused = CliRunner().invoke(cli, ["trust"])  # no terminal: the summary, and nothing trusted
    assert refused.exit_code == 2
    lines = refused.output.splitlines()
    start = lines.index("  changed since you trusted it:")
    assert lines[start + 1:start + 4] == [
        "    added    tools/new.yaml",
        "    removed  tools/helper.py",
        "    modified tools/hi.yaml",
    ]
    diff = lines[start + 4:]
    assert "    --- tools/hi.yaml (trusted)" in diff and "    +++ tools/hi.yaml (now)" in diff
    assert "    -command: [echo, hi]" in diff and "    +command: [curl, evil.example]" in diff
    assert "    +++ tools/new.yaml (now)" in diff and "    +command: [echo, new]" in diff
    # Once trusted again, nothing is listed as changed.
    assert nami("trust", "--yes").exit_code == 0
    assert "changed since you trusted it" not in nami("trust", "--yes").output


def test_the_diff_is_capped_and_the_snapshot_is_private(project: Path, temp_home: Path) -> None:
    assert nami("trust", "--yes").exit_code == 0
    snapshots = temp_home / ".local" / "state" / "nami" / "trusted"
    (folder,) = snapshots.iterdir()
    assert oct(snapshots.stat().st_mode & 0o777) == "0o700"
    copies = [f for f in folder.iterdir() if f.suffix == ".txt"]
    assert copies and all(oct(f.stat().st_mode & 0o777) == "0o600" for f in copies)
    assert {f.read_text() for f in copies} == {(project / "agent.yaml").read_text(),
                                              (project / "tools" / "hi.yaml").read_text()}
    long = "".join(f"# line {n}\n" for n in range(1000))
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, hi]\n" + long)
    output = CliRunner().invoke(cli, ["trust"]).output.splitlines()
    start = output.index("  changed since you trusted it:")
    assert len(output[start:]) < 210
    assert "    ... [" in output[-3] and "more diff lines not shown]" in output[-3]
    assert output[-2].startswith("  (the full summary of what it sets and adds")  # then the no-terminal message


def test_the_snapshot_never_decides_trust(project: Path, temp_home: Path) -> None:
    import shutil

    assert nami("trust", "--yes").exit_code == 0
    shutil.rmtree(temp_home / ".local" / "state" / "nami" / "trusted")
    assert without_sandbox_notice(nami("tools", "call", "hi").output) == "hi\n"  # still trusted: the digest decides
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, bye]\n")
    changed = CliRunner().invoke(cli, ["trust"])
    assert changed.exit_code == 2
    assert "changed since you trusted it" not in changed.output  # no snapshot: nothing to compare, no crash


def test_what_widens_the_sandbox_is_shown_and_a_change_to_it_asks_again(project: Path) -> None:
    (project / "agent.yaml").write_text("tools:\n  files: [tools/]\npermissions: {exec: allow}\n"
                                        "sandbox: {mode: off, network: true, writable: [~/.cache/go-build]}\n"
                                        "mcp_servers:\n  db: {command: db-server, sandbox: {network: true}}\n")
    (project / "tools" / "kube.yaml").write_text("name: kube\ndescription: d\ncommand: [kubectl, get, pods]\n"
                                                 "sandbox: {network: true, reads: [~/.kube/config]}\n")
    shown = nami("trust", "--yes")
    assert shown.exit_code == 0, shown.output
    assert "widens the sandbox of every call:" in shown.output
    assert "mode: off (its tools run without the sandbox)" in shown.output
    assert "network: true (the bash built-in reaches the network)" in shown.output
    assert "writable: ~/.cache/go-build" in shown.output
    assert "kube (tools/kube.yaml:1:1): the network; reads ~/.kube/config" in shown.output
    assert "MCP server db (agent.yaml:" in shown.output
    needs = shown.output.split("need more than the sandbox gives:")[1].split("adds 2 tools")[0]
    assert "kube" in needs and "hi (" not in needs  # hi declares nothing
    (project / "tools" / "kube.yaml").write_text("name: kube\ndescription: d\ncommand: [kubectl, get, pods]\n"
                                                 "sandbox: {network: true, reads: [~/.kube/config, ~/.ssh]}\n")
    again = nami("tools", "call", "hi")
    assert again.exit_code == 2 and "tools/kube.yaml modified since you trusted" in again.output
    retrusted = nami("trust", "--yes").output  # what changed, in the diff
    assert "    +sandbox: {network: true, reads: [~/.kube/config, ~/.ssh]}" in retrusted.splitlines()
    assert "reads ~/.kube/config, ~/.ssh" in nami("trust", "--summary").output


def test_a_pipeline_tools_sandbox_and_programs_are_shown_as_a_commands(project: Path) -> None:
    """A pipeline: tool (issue 45) widens the sandbox and runs programs like a command: the summary says so."""
    (project / "tools" / "images.yaml").write_text(
        "defaults: {risk: read, sandbox: {network: true, reads: [~/.kube/config]}}\ntools:\n"
        "  - name: images\n    description: d\n    pipeline: [[kubectl, get, pods, -o, json], [jq, -r, .items]]\n")
    shown = nami("trust", "--yes")
    assert shown.exit_code == 0, shown.output
    assert "images (tools/images.yaml:3:5): the network; reads ~/.kube/config" in shown.output
    assert "images (read, pipeline) from tools/images.yaml:3:5: runs kubectl, jq" in shown.output


def test_a_project_that_only_narrows_the_sandbox_shows_nothing_of_it(project: Path) -> None:
    (project / "agent.yaml").write_text("tools:\n  files: [tools/]\nsandbox: {mode: required, hide: [~/.vault]}\n")
    assert "sandbox" not in nami("trust", "--yes").output


def test_a_retrust_shows_the_diff_first_and_the_summary_on_request(project: Path) -> None:
    """Issue 41: re-trusting after each tool edit reprinted the whole summary before the diff. What changed
    comes first; the rest of the summary (read at the last trust) on `s`."""
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [curl, evil.example]\n")
    terminal = Terminal(None, ["tools", "call", "hi"], project)
    try:
        terminal.expect(r"Trust it and go on\? \[y/N/s\]: ")
        before = terminal.lines()
        assert "    +command: [curl, evil.example]" in before and "    modified tools/hi.yaml" in before
        assert not any(line.startswith("    hi (exec, command)") for line in before)  # the summary waits
        assert any(line.startswith("  (the full summary of what it sets and adds") for line in before)
        terminal.send("s\r")
        terminal.expect(r"Trust it and go on\? \[y/N\]: ")
        assert "    hi (exec, command) from tools/hi.yaml:1:1: runs curl" in terminal.lines()
        terminal.send("n\r")
        assert terminal.finish() == 2
    finally:
        terminal.close()
    assert nami("tools", "call", "hi").exit_code == 2  # nothing was trusted


def test_nami_trust_on_a_changed_project_answers_s_with_the_summary(project: Path) -> None:
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, bye]\n")
    terminal = Terminal(None, ["trust"], project)
    try:
        terminal.expect(r"Trust it\? \[y/N/s\]: ")
        assert not any(line.startswith("    hi (exec, command)") for line in terminal.lines())
        terminal.send("s\r")
        terminal.expect(r"Trust it\? \[y/N\]: ")
        assert "    hi (exec, command) from tools/hi.yaml:1:1: runs echo" in terminal.lines()
        terminal.send("y\r")
        assert terminal.finish() == 0
    finally:
        terminal.close()
    assert without_sandbox_notice(nami("tools", "call", "hi").output) == "bye\n"


def test_a_retrust_never_holds_back_a_warning(project: Path) -> None:
    cache = project / "tools" / "__pycache__"
    cache.mkdir()
    (cache / "helper.cpython-311.pyc").write_bytes(b"\x00compiled")
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, bye]\n")
    changed = CliRunner().invoke(cli, ["trust"])  # no terminal: what changed, and nothing trusted
    assert changed.exit_code == 2
    lines = changed.stdout.splitlines()
    assert "    +command: [echo, bye]" in lines
    assert any(line.startswith("  WARNING: compiled code that cannot be reviewed") for line in lines)
    assert not any(line.startswith("    hi (exec, command)") for line in lines)
    assert "`nami trust --summary` shows everything" in changed.stderr
    full = CliRunner().invoke(cli, ["trust", "--summary"]).stdout.splitlines()
    assert "    hi (exec, command) from tools/hi.yaml:1:1: runs echo" in full and "    +command: [echo, bye]" in full


def test_the_library_is_one_line_per_group_but_a_projects_own_copy_is_not(project: Path) -> None:
    from nami_yaml.registry.library import LIBRARY_ROOT

    copy = (LIBRARY_ROOT / "kubectl" / "get.yaml").read_text().replace("name: kubectl_get", "name: my_get")
    assert "name: my_get" in copy
    (project / "tools" / "my_get.yaml").write_text(copy)
    (project / "agent.yaml").write_text("tools:\n  library: [kubectl, terraform, git/log]\n  files: [tools/]\n")
    lines = nami("trust", "--yes").output.splitlines()
    (kubectl,) = [line for line in lines if line.startswith("    library kubectl: ")]
    assert kubectl.startswith("    library kubectl: 13 tools (9 read; write: kubectl_apply, kubectl_rollout_restart, "
                              "kubectl_rollout_undo, kubectl_scale), runs kubectl; docs: runs kubectl …")
    assert not any(line.startswith("    kubectl_") for line in lines)
    folded = [line for line in lines if line.startswith("    library ") and ", runs " in line]
    assert [line.split(":")[0] for line in folded] == ["    library kubectl", "    library terraform"]  # git/log alone
    assert "      terraform_{apply,plan,show} receive the host's AWS_ACCESS_KEY_ID" in "\n".join(lines)
    assert any(line.startswith("    git_log (read, command) from ") for line in lines)  # a single tool: its own lines
    # The project's own copy of a library file is the project's: listed on its own, with its docs command.
    assert "    my_get (read, command) from tools/my_get.yaml:" in "\n".join(lines)
    assert "    hi (exec, command) from tools/hi.yaml:1:1: runs echo" in lines
    assert sum(line.startswith("    library kubectl (13 tools)") for line in lines) == 1  # its sandbox needs, once


def test_a_project_file_linked_to_a_library_file_unfolds_its_group(project: Path) -> None:
    """The project's link to a library file is the project's: what it reaches is listed tool by tool."""
    from nami_yaml.registry.library import LIBRARY_ROOT

    (project / "tools" / "get.yaml").symlink_to(LIBRARY_ROOT / "kubectl" / "get.yaml")
    (project / "agent.yaml").write_text("tools:\n  library: [kubectl]\n  files: [tools/]\n")
    lines = nami("trust", "--yes").output.splitlines()
    assert not any(line.startswith("    library kubectl: ") for line in lines)
    assert any(line.startswith("    kubectl_get (read, command) from ") for line in lines)
