"""``nami check``'s pipeline: agent.yaml and the user config, every tool they load (and the extra tool files
or folders given), the rules, the MCP server entries, and any batch task files; every problem found, in
one run, as ``file:line:col: $.path: message``. Nothing is run or started."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.app.project import read_settings
from nami_yaml.app.toolset import check_toolset
from nami_yaml.config.effective import Effective
from nami_yaml.config.mcp_servers import check_problems as mcp_check_problems
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.display import plural
from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.policy.layers import rule_problems
from nami_yaml.registry.draft import Host
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool


@dataclass
class CheckReport:
    effective: Effective | None
    tools: list[Tool] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # sorted by file and position
    tasks: dict[str, int] = field(default_factory=dict)  # task file -> how many tasks it holds
    error: ConfigError | None = None  # the configuration could not be read at all

    @property
    def errors(self) -> int:
        return sum(p.is_error for p in self.problems) + (self.error is not None)

    @property
    def warnings(self) -> int:
        return sum(not p.is_error for p in self.problems)

    def summary(self) -> str:
        """The one line of a clean check: what was checked."""
        assert self.effective is not None
        kinds = Counter("built-in" if t.builtin else t.runner.kind for t in self.tools)
        files = len({t.source.rsplit(":", 2)[0] for t in self.tools if not t.builtin})
        where = self.effective.config_path or "no agent.yaml (defaults)"
        detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        noted = f"; {plural(self.warnings, 'warning')}" if self.warnings else ""
        servers = server_specs(self.effective)
        started = f"; {plural(len(servers), 'MCP server')} (checked, not started)" if servers else ""
        batches = "".join(f"; {name}: {plural(count, 'task')}" for name, count in self.tasks.items())
        return (f"ok: {where}; {plural(len(self.tools), 'tool')} ({detail or 'none'}) from "
                f"{plural(files, 'tool file')}{started}{batches}{noted}")


def check_project(config: str | None, paths: Sequence[str] = (), *, search_path: str | None = None) -> CheckReport:
    """Check everything ``nami check`` checks. ``paths``: extra tool files or folders, and batch task files
    (.jsonl, or YAML with ``tasks:``); ``search_path``: the PATH programs are looked for on."""
    task_files, tool_paths = _split_task_files(paths)
    report = CheckReport(None)
    found: list[Problem] = []
    try:
        # The settings from what of the config files is valid, so their tools are checked in the same run.
        report.effective = read_settings(config, problems=found)
        host = Host(Path(report.effective.get("workspace") or Path.cwd()), search_path)
        report.tools, more = check_toolset(report.effective, tool_paths, host=host)
        found += more
        # Rules are compiled, and checked against the tools where they all load: nothing is matched or run.
        found += rule_problems(report.effective, Registry(report.tools), all_tools=not any(p.is_error for p in more))
        found += mcp_check_problems(report.effective)  # MCP servers are not started
    except ConfigError as exc:  # no configuration to check at all (--config names no file)
        report.error = exc
    found += _check_task_files(task_files, report.tasks)
    report.problems = SpecError(found).problems
    return report


def _split_task_files(paths: Sequence[str]) -> tuple[list[Path], list[str]]:
    """Batch task files apart from tool files and folders."""
    from nami_yaml.batch.tasks import is_task_file

    task_files = [Path(p) for p in paths if is_task_file(Path(p))]
    return task_files, [p for p in paths if Path(p) not in task_files]


def _check_task_files(files: list[Path], counts: dict[str, int]) -> list[Problem]:
    from nami_yaml.batch.tasks import check_task_file

    problems: list[Problem] = []
    for path in files:
        tasks, found = check_task_file(path)
        problems += found
        counts[str(path)] = len(tasks)
    return problems
