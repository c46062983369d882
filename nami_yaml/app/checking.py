"""``nami check``'s pipeline: agent.yaml and the user config, every tool they load (and the extra tool files
or folders given), the rules, the MCP server entries, and any batch task files; every problem found, in
one run, as ``file:line:col: $.path: message``. Nothing is run or started."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.app.named_agents import agent_problems
from nami_yaml.app.toolset import check_toolset
from nami_yaml.builtins.skill_tools import CLAUDE_TOOLS
from nami_yaml.config.agents import read_agents
from nami_yaml.config.effective import Effective
from nami_yaml.config.hooks import matcher_problems
from nami_yaml.config.mcp_servers import check_problems as mcp_check_problems
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.settings import load_settings
from nami_yaml.config.skills import check_skills
from nami_yaml.display import plural
from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.policy.layers import rule_problems
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.draft import Host
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool


@dataclass
class CheckReport:
    effective: Effective | None
    tools: list[Tool] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # sorted by file and position
    tasks: dict[str, int] = field(default_factory=dict)  # task file -> how many tasks it holds
    agents: list[str] = field(default_factory=list)  # the named agents
    policy_tests: int = 0  # how many policy tests were run (they all passed when there is no error)
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
        agents = f"; {plural(len(self.agents), 'agent')} ({', '.join(self.agents)})" if self.agents else ""
        tests = f"; {plural(self.policy_tests, 'policy test')} passed" if self.policy_tests else ""
        return (f"ok: {where}; {plural(len(self.tools), 'tool')} ({detail or 'none'}) from "
                f"{plural(files, 'tool file')}{agents}{started}{tests}{batches}{noted}")


def check_project(config: str | None, paths: Sequence[str] = (), *, search_path: str | None = None) -> CheckReport:
    """Check everything ``nami check`` checks. ``paths``: extra tool files or folders, and batch task files
    (.jsonl, or YAML with ``tasks:``); ``search_path``: the PATH programs are looked for on."""
    task_files, tool_paths = _split_task_files(paths)
    report = CheckReport(None)
    found: list[Problem] = []
    try:
        # The settings from what of the config files is valid, so their tools are checked in the same run.
        report.effective = load_settings(ProjectRequest(config=config), problems=found)
        host = Host(Path(report.effective.get("workspace") or Path.cwd()), search_path, report.effective.sandbox)
        found += [problem for problem in check_skills(report.effective)[1] if not problem.is_error]  # errors: below
        report.tools, more = check_toolset(report.effective, tool_paths, host=host)
        found += more
        all_loaded = not any(p.is_error for p in more)
        registry = Registry(report.tools)
        # Rules are compiled, and checked against the tools where they all load: nothing is matched or run.
        found += rule_problems(report.effective, registry, all_tools=all_loaded)
        found += mcp_check_problems(report.effective)  # MCP servers are not started
        specs, agents_found = read_agents(report.effective)
        report.agents = list(specs)
        found += agents_found
        if all_loaded:  # a named agent's tools are looked up among the project's
            found += agent_problems(report.effective, specs, registry)
            # A hook copied from Claude Code whose matcher names its tools (Bash) would never run here.
            found += matcher_problems(report.effective, [tool.name for tool in report.tools], CLAUDE_TOOLS)
        if not any(p.is_error for p in found) and report.effective.get("policy_tests") is not None:
            found += _policy_test_problems(config, tool_paths, report)
    except SpecError as exc:
        found += exc.problems
    except ConfigError as exc:  # no configuration to check at all (--config names no file)
        report.error = exc
    found += _check_task_files(task_files, report.tasks)
    report.problems = SpecError(found).problems
    return report


def _policy_test_problems(config: str | None, tool_paths: list[str], report: CheckReport) -> list[Problem]:
    """Each policy test that fails, decided as the model's calls are (nothing runs)."""
    from nami_yaml.app.policy_check import open_for_deciding, project_policy_tests

    with open_for_deciding(config, extra_tools=tool_paths) as project:
        tests = project_policy_tests(project)
    report.policy_tests = len(tests.outcomes)
    return [*tests.problems, *(problem for o in tests.outcomes if (problem := o.problem()) is not None)]


def _split_task_files(paths: Sequence[str]) -> tuple[list[Path], list[str]]:
    """Batch task files apart from tool files and folders."""
    from nami_yaml.spec.tasks import is_task_file

    task_files = [Path(p) for p in paths if is_task_file(Path(p))]
    return task_files, [p for p in paths if Path(p) not in task_files]


def _check_task_files(files: list[Path], counts: dict[str, int]) -> list[Problem]:
    from nami_yaml.spec.tasks import check_task_file

    problems: list[Problem] = []
    for path in files:
        tasks, found = check_task_file(path)
        problems += found
        counts[str(path)] = len(tasks)
    return problems
