"""``nami import``: where the files go (agent.yaml's first ``tools.files`` folder, else ``tools/``), and for
``nami import cli`` the program run as a tool: its help read and its draft probed through the one opener,
the guards of a call made by hand and the sandbox, like ``nami tools call`` (recorded in the audit log).
Nothing is run that the person did not ask for: the help command and one probe call of a read tool."""

from __future__ import annotations

import glob
import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nami_yaml.errors import ConfigError
from nami_yaml.importers import cli_help
from nami_yaml.importers.common import Outcome, file_text, verify_loads, write_outcomes
from nami_yaml.project_request import ProjectRequest
from nami_yaml.result import ToolResult

DEFAULT_FOLDER = "tools"
HELP_TOOL = "nami_import_help"


def default_out_dir(cwd: Path) -> Path:
    """The first folder agent.yaml's ``tools.files`` names (a glob's fixed part, a file's folder), relative
    to agent.yaml; else ``tools/`` here."""
    from nami_yaml.config.settings import load_settings

    try:  # problems collected, not raised: a glob that matches nothing yet is where imported files go
        effective = load_settings(ProjectRequest(cwd=cwd, user_config=False), problems=[])
    except ConfigError:
        return cwd / DEFAULT_FOLDER
    if effective.config_path is None:
        return cwd / DEFAULT_FOLDER
    base = effective.config_path.parent
    try:  # as written: the settings leave out an entry that matches no file yet
        written = (yaml.safe_load(effective.config_path.read_text(encoding="utf-8")) or {}).get("tools") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        written = {}
    for entry in written.get("files") or [] if isinstance(written, dict) else []:
        if isinstance(entry, str) and entry:
            head = re.split(r"[*?\[]", entry)[0]
            if glob.has_magic(entry):
                fixed = Path(head) if head.endswith("/") or not head else Path(head).parent
            else:
                fixed = Path(entry).parent if Path(entry).suffix in (".yaml", ".yml") else Path(entry)
            return (base / fixed).resolve()
    return cwd / DEFAULT_FOLDER


def run_as_tool(cwd: Path, tool: dict[str, Any], arguments: dict[str, Any]) -> ToolResult:
    """Run one tool definition as ``nami tools call`` would, in this folder's sandbox, by hand."""
    from nami_yaml.app.manual import by_hand_guards, call_by_hand
    from nami_yaml.app.project import open_project

    with tempfile.TemporaryDirectory(prefix="nami-import-") as folder:
        path = Path(folder) / "draft.yaml"
        path.write_text(yaml.safe_dump(tool, sort_keys=False), encoding="utf-8")
        request = ProjectRequest(cwd=cwd, tools=(str(path),), discover=False)
        with open_project(request, will_run=True) as project:
            guards = by_hand_guards(project, None)
            return call_by_hand(project.executor(), guards, tool["name"], arguments).result


def help_text(cwd: Path, program: str, subs: Sequence[str]) -> tuple[str, list[str]]:
    """The program's help, read in the sandbox: ``--help``, else ``-h``, else ``PROGRAM help SUB``; returns
    the text of the first that lists options, and the commands tried."""
    tried: list[str] = []
    # A subcommand's -h first: git SUB --help opens the whole man page, -h is its summary (kubectl, helm,
    # docker and systemctl print the same for both).
    attempts = [[program, *subs, "--help"], [program, *subs, "-h"]]
    if subs:
        attempts.reverse()
    if subs:
        attempts.append([program, "help", *subs])
    attempts.append([program, *subs, "--help", "all"])  # procps' ps lists its options only so
    best = ""
    for argv in attempts:
        tried.append(" ".join(argv))
        result = run_as_tool(cwd, {"name": HELP_TOOL, "description": "Read a program's help.", "risk": "read",
                                   "command": argv}, {})
        text = _output_of(result)
        if cli_help.parse_options(text):
            return text, tried
        best = best or text
    return best, tried


def _output_of(result: ToolResult) -> str:
    # Help printed with a non-zero exit (git's -h exits 129) is still the help: the whole content is read.
    return result.content


@dataclass
class CliImport:
    outcome: Outcome
    help_commands: list[str]
    verified_options: bool = False
    probe: ToolResult | None = None
    probe_arguments: dict[str, Any] = field(default_factory=dict)
    unverified: list[str] = field(default_factory=list)  # why the tool is not verified

    @property
    def verified(self) -> bool:
        return not self.unverified


def import_cli(cwd: Path, program: str, subs: Sequence[str], out_dir: Path, *, chosen: Sequence[str] = (),
               examples: dict[str, Any] | None = None, max_options: int = 8, force: bool = False,
               dry_run: bool = False) -> CliImport:
    """Draft a tool from the installed program's help, verify it (options listed by the help read in the
    sandbox, the draft loads, a read tool's probe call succeeds), then write it, saying what is unverified."""
    text, tried = help_text(cwd, program, subs)
    flag = tried[-1].split()[-1] if tried and tried[-1].split()[-1] in ("-h", "--help") else "--help"
    drafted = cli_help.draft(program, subs, text, chosen=chosen, max_options=max_options, help_flag=flag)
    imported = drafted.imported
    outcome = Outcome(" ".join(tried), out_dir / f"{imported.name}.yaml", [imported])
    done = CliImport(outcome, tried)
    if not cli_help.parse_options(text):
        done.unverified.append(f"the help ({', '.join(tried)}) lists no options nami could read")
    missing = cli_help.unlisted_options(imported.tool, text)
    if missing:
        done.unverified.append(f"options not listed by the installed {program}'s help: {', '.join(missing)}")
    done.verified_options = not missing and bool(text)
    verify_loads([outcome], "cli")
    if imported.skipped:
        done.unverified.append(imported.skipped)
    elif imported.tool.get("risk") == "read":
        arguments, lacking = cli_help.probe_arguments(imported.tool, examples or {})
        done.probe_arguments = arguments
        if lacking:
            done.unverified.append(f"no probe call: required parameters without an example: {', '.join(lacking)} "
                                   "(give --example NAME=VALUE)")
        else:
            done.probe = run_as_tool(cwd, imported.tool, arguments)
            if not done.probe.ok:
                output = " ".join(done.probe.content.split())[:300]
                done.unverified.append(f"the probe call {json.dumps(arguments)} failed: {output}")
    else:
        done.unverified.append(f"risk {imported.tool.get('risk')}: not probed (only read tools are run to check)")
    imported.notes.append("verified: options listed by the installed help; loads; probe call succeeded"
                          if done.verified else "NOT VERIFIED: " + "; ".join(done.unverified))
    if not dry_run:
        write_outcomes([outcome], "cli", force=force)
        if not done.verified and outcome.written:
            _mark_unverified(outcome, done.unverified)
    return done


def _mark_unverified(outcome: Outcome, why: list[str]) -> None:
    """An unverified draft says so in its own first lines, not only in the report."""
    from nami_yaml.importers.common import write_atomically

    text = file_text(outcome, "cli")
    warning = "".join(f"# NOT VERIFIED: {' '.join(line.split())}\n" for line in why)
    write_atomically(outcome.out_file, warning + text)
