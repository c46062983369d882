"""What a person reviews before trusting a project's agent.yaml: what it sets, the tools it adds (the
programs they run, the secrets they receive, a folder outside the project), what changed since the last
trust. Assembly (it reads the registry), so it lives here and not in config/."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.config.agents import read_agents
from nami_yaml.config.effective import Effective
from nami_yaml.config.hooks import hooks_of
from nami_yaml.config.loaded import AGENTS_SKILLS, loaded_files
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.mcp_servers import trust_lines as mcp_trust_lines
from nami_yaml.config.sandbox import DeclaredNeeds
from nami_yaml.config.sandbox import trust_lines as sandbox_trust_lines
from nami_yaml.config.trust import (
    COMPILED_SUFFIXES,
    OUTSIDE,
    TrustState,
    covered_files,
    prompt_file,
    trust_state,
)
from nami_yaml.config.trust_diff import Changes, changes_since_trusted, reviewable, shown
from nami_yaml.display import visible_line
from nami_yaml.errors import SpecError
from nami_yaml.registry.groups import compact
from nami_yaml.registry.overview import programs, runner_overview, sandbox_needs
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.telemetry.switch import trust_lines as telemetry_trust_lines


@dataclass(frozen=True)
class Review:
    """What a person reads before trusting: ``overview`` (what the project sets and adds) and ``changed``
    (what changed since the last trust: the files and their diff; empty on a first trust, or with no
    snapshot to compare with). Both escaped for a terminal."""

    overview: list[str]
    changed: list[str]

    @property
    def lines(self) -> list[str]:
        return [*self.overview, *self.changed]

    @property
    def warnings(self) -> list[str]:
        return warning_lines(self.overview)


def warning_lines(lines: list[str]) -> list[str]:
    """A summary's WARNING lines: a re-trust shows them even when it shows the rest only on request."""
    return [line for line in lines if line.lstrip().startswith("WARNING")]


def trust_review(effective: Effective) -> tuple[TrustState, Review]:
    """For ``nami trust``: the project's trust state and what a person reads before trusting it."""
    from nami_yaml.app.toolset import build_registry

    return trust_state(effective), review(effective, build_registry(effective))


LOOK = object()  # summary(): find the changes since the last trust itself


def summary(effective: Effective, registry: Registry, changes: Changes | None | object = LOOK) -> list[str]:
    """:func:`review`'s lines, the overview then what changed."""
    return review(effective, registry, changes).lines


def review(effective: Effective, registry: Registry, changes: Changes | None | object = LOOK) -> Review:
    """What a reviewer should look at before trusting: what the file changes, which tools it adds (with the
    programs they run, the secrets they receive, a folder outside the project; the library's tools one
    line per group), and what changed since the last trust (``changes``, when already known: see
    :func:`changes_of`)."""
    assert effective.config_path is not None
    project = effective.config_path.parent
    mine = str(effective.config_path)
    lines = [f"agent.yaml: {effective.config_path}"]
    for key in ("model.base_url", "model.api_key_env", "model.provider", "model.name", "permissions.write",
                "permissions.exec", "tools.fetch_url.allow_hosts", "tools.bash.max_timeout", "audit.path"):
        if effective.sources.get(key) == mine:
            lines.append(f"  sets {key} = {json.dumps(effective.get(key))}")
    for key in ("workspace", "system_file"):
        value = effective.get(key)
        if value and effective.sources.get(key) == mine:
            lines.append(f"  sets {key} = {value}" + ("" if _inside(Path(value), project) else OUTSIDE))
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    rules = (project_file.data.get("rules") or []) if project_file else []
    if rules:
        counts = {d: sum(1 for r in rules if r.get("decision") == d) for d in ("allow", "ask", "deny")}
        lines.append(f"  sets {len(rules)} rule{'s' if len(rules) != 1 else ''} "
                     f"({', '.join(f'{n} {d}' for d, n in counts.items() if n)}):")
        for rule in rules:
            lines.append(f"    {json.dumps(rule, ensure_ascii=False)}")
    targets = (project_file.data.get("targets") or {}) if project_file else {}
    if targets:
        lines.append(f"  sets {len(targets)} target{'s' if len(targets) != 1 else ''}, whose env the calls on each get:")
        for name, spec in targets.items():
            env = " ".join(f"{key}={value}" for key, value in (spec.get("env") or {}).items())
            needs = (spec.get("approvals") or {}).get("required")
            lines.append(f"    {name}: {env or '(no env)'}" + (f" (needs {needs} approvers)" if needs else ""))
    lines.extend(_approval_lines((project_file.data.get("approvals") or {}) if project_file else {}))
    if any(effective.sources.get(f"model.{k}") == mine for k in ("base_url", "api_key_env", "provider")):
        lines.append(f"  {_key_destination(effective)}")
    files = covered_files(effective)
    for file in files:
        if file.suffix in COMPILED_SUFFIXES:
            lines.append(f"  WARNING: compiled code that cannot be reviewed: {file} (delete it before trusting)")
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    for spec in (project_file.data.get("skills", []) if project_file else []):
        lines.append(f"  adds skills from {spec}")
    lines.extend(convention_lines(effective, project))
    lines.extend(mcp_trust_lines(effective))
    lines.extend(telemetry_trust_lines(project_file.data.get("telemetry") if project_file else None))
    for hook in hooks_of(project_file) if project_file else ():
        # Hooks run at every call or prompt they match: shown whole, as the argv that runs.
        workspace = Path(effective.get("workspace") or project_file.path.parent)
        lines.append(f"  runs hook {hook.event}{' for ' + repr(hook.matcher) if hook.matcher else ''}: "
                     f"{json.dumps(hook.argv(workspace))}"
                     + (f", sandbox {json.dumps(hook.sandbox.as_mapping())}" if hook.sandbox.declared else ""))
    for spec in read_agents(effective)[0].values():
        tools = ", ".join(spec.tools) if spec.tools is not None else "all the project's"
        rights = ", ".join(f"{risk}: {value}" for risk, value in spec.permissions.items())
        lines.append(f"  defines agent {spec.name} ({spec.where}): tools {tools}"
                     f"{'; ' + rights if rights else ''}{'; model ' + str(spec.model.get('name')) if spec.model.get('name') else ''}")
    tools = [t for t in registry if not t.builtin]
    # What widens the sandbox: a change to any of it changes agent.yaml or a tool file, so trust asks again.
    changed = changes_of(effective, files) if changes is LOOK else changes
    touched = set(files)
    if isinstance(changed, Changes):
        touched.update((*changed.added, *changed.removed, *changed.modified))
    workspace = Path(effective.get("workspace") or Path.cwd())
    folded = _foldable(effective, tools, touched, workspace, project)
    declared = [DeclaredNeeds(t.name, str(t.source), sandbox_needs(t)) for t in tools
                if t not in folded.get(t.group or "", ())]
    declared += _group_needs(folded)
    declared += [DeclaredNeeds(f"MCP server {s.name}", s.where, s.sandbox) for s in server_specs(effective)
                 if s.in_project]
    lines.extend(sandbox_trust_lines(project_file.data.get("sandbox") if project_file else None, declared))
    lines.append(f"  adds {len(tools)} tool{'s' if len(tools) != 1 else ''}:" if tools else "  adds no tools")
    for tool in tools:
        if tool.group in folded and tool in folded[tool.group]:
            if tool is folded[tool.group][0]:
                lines.extend(_group_lines(tool.group, folded[tool.group]))
        else:
            lines.extend(_tool_lines(tool, workspace, project))
    diff: list[str] = []
    if isinstance(changed, Changes) and changed:
        diff.append("  changed since you trusted it:")
        for label, group in (("added", changed.added), ("removed", changed.removed), ("modified", changed.modified)):
            diff.extend(f"    {label:<8} {shown(file, project)}" for file in group)
        diff.extend(f"    {line}" for line in changed.diff)
    # Names and paths come from the repository: no escape codes, and no newline to print a line of its own.
    return Review([visible_line(line) for line in lines], [visible_line(line) for line in diff])


def convention_lines(effective: Effective, project: Path) -> list[str]:
    """What other agents' files add (docs/conventions.md): the AGENTS.md text the system prompt gets, and
    the skills of .agents/skills."""
    loaded = loaded_files(effective, project_only=True)
    lines = []
    if loaded.instructions:
        names = ", ".join(shown(file, project) for file in loaded.instructions)
        lines.append(f"  adds instructions to the system prompt (AGENTS.md, read from the root down to the "
                     f"current folder): {names}")
    conventional = (project.resolve() / AGENTS_SKILLS).resolve()
    if conventional in loaded.skill_folders:
        skills = sorted(file.parent.name for file in loaded.skills if file.parent.parent == conventional)
        lines.append(f"  adds skills from {AGENTS_SKILLS}: {', '.join(skills)}")
    return lines


def changes_of(effective: Effective, files: list[Path] | None = None) -> Changes | None:
    """What changed in the project's covered files since the last trust (None: no snapshot to compare)."""
    assert effective.config_path is not None
    files = covered_files(effective) if files is None else files
    return changes_since_trusted(effective.config_path, files, reviewable(files, prompt_file(effective)))


def _approval_lines(approvals: dict[str, object]) -> list[str]:
    """Where the project sends its questions and who it lets answer them: a cloned repository must not
    send your approvals to its own folder or name its own approvers unseen."""
    lines = []
    for key in ("via", "path", "timeout", "expires", "page_url", "notify"):
        if key in approvals:
            lines.append(f"  sets approvals.{key} = {json.dumps(approvals[key], ensure_ascii=False)}")
    approvers = approvals.get("approvers")
    if isinstance(approvers, dict) and approvers:
        lines.append(f"  names approvers who may answer with a token or an SSH key: {', '.join(visible_line(n) for n in approvers)}")
    return lines


def _inside(path: Path, project: Path) -> bool:
    return path == project or project in path.parents


def _key_destination(effective: Effective) -> str:
    """Where the API key comes from and goes: "from $DEEPSEEK_API_KEY (unset)", never "from unset"."""
    url = effective.model.base_url
    source = effective.api_key_source
    if source.startswith("$"):
        return f"sends the API key from {source} to {url}"
    variable = effective.model.api_key_env
    if effective.api_key is None:
        if variable:
            return f"sends the API key from ${variable} (unset) to {url}"
        return f"sends no API key to {url} (no api_key_env, and none is set)"
    return f"sends no real API key to {url} ({source})"


def _declared_in(tool: Tool) -> Path:
    return Path(tool.source.rsplit(":", 2)[0])


def _foldable(effective: Effective, tools: list[Tool], touched: set[Path], workspace: Path,
              project: Path) -> dict[str, list[Tool]]:
    """Library group -> its tools that may be summed up in one line: declared in a file of nami's own
    library that ``tools.library`` selects, not one of the project's (covered or changed) files, and with
    nothing a line of their own would flag (a folder outside the project). Every other tool, a project's
    copy of a library file included, keeps its own lines."""
    from nami_yaml.app.toolset import library_files

    try:
        shipped = set(library_files(effective))
    except SpecError:  # an unknown library name: no registry would have loaded; fold nothing
        return {}
    shipped = {path.resolve() for path in shipped}
    touched = {path.resolve() for path in touched}
    folded: dict[str, list[Tool]] = {}
    for tool in tools:
        declared = _declared_in(tool).resolve()
        if (tool.group is None or declared not in shipped or declared in touched
                or _outside_cwd(tool, workspace, project)):
            continue
        folded.setdefault(tool.group, []).append(tool)
    return {group: members for group, members in folded.items() if len(members) > 1}  # one tool: its own lines


def _outside_cwd(tool: Tool, workspace: Path, project: Path) -> Path | None:
    """The folder a tool runs in when it is outside the project, else None."""
    cwd = runner_overview(tool).get("cwd")
    if not cwd:
        return None
    folder = (workspace / cwd).resolve()
    return None if _inside(folder, project.resolve()) else folder


def _group_needs(folded: dict[str, list[Tool]]) -> list[DeclaredNeeds]:
    """What a library group's tools need of the sandbox, one entry per group and set of needs."""
    declared = []
    for group, tools in folded.items():
        alike: dict[tuple[object, ...], list[Tool]] = {}
        for tool in tools:
            needs = sandbox_needs(tool)
            alike.setdefault((needs.network, needs.reads, needs.writable), []).append(tool)
        for same in alike.values():
            name = (f"library {group} ({len(same)} tools)" if len(same) == len(tools) and len(same) > 1
                    else f"library {group}: {compact(group, [tool.name for tool in same])}")
            declared.append(DeclaredNeeds(name, "nami's library", sandbox_needs(same[0])))
    return declared


def _group_lines(group: str, tools: list[Tool]) -> list[str]:
    """A library group in one line (two when its tools receive host variables): how many tools, what they
    run, the ones that are not read-only by name, and their docs commands, which run without asking."""
    runs = ", ".join(dict.fromkeys(program for tool in tools for program in programs(tool))) or "?"
    reads = sum(tool.risk == "read" for tool in tools)
    rest = {}
    for tool in tools:
        if tool.risk != "read":
            rest.setdefault(tool.risk, []).append(tool.name)
    risks = "; ".join([f"{reads} read"] * bool(reads) + [f"{risk}: {', '.join(names)}" for risk, names in rest.items()])
    docs = [runner_overview(tool).get("docs_command") for tool in tools]
    docs = [command for command in docs if command]
    line = (f"    library {group}: {len(tools)} tool{'s' if len(tools) != 1 else ''} ({risks}), runs {runs}")
    if docs:
        heads = ", ".join(dict.fromkeys(command[0] for command in docs))
        example = json.dumps(docs[0], ensure_ascii=False)
        line += (f"; docs: runs {heads} … when the model reads them, without asking "
                 f"({len(docs)} command{'s' if len(docs) != 1 else ''}, e.g. {example})")
    lines = [line]
    alike: dict[tuple[str, ...], list[str]] = {}
    for tool in tools:
        secrets = tuple(runner_overview(tool).get("env_passthrough") or ())
        if secrets:
            alike.setdefault(secrets, []).append(tool.name)
    for secrets, names in alike.items():
        lines.append(f"      {compact(group, names)} receive{'s' if len(names) == 1 else ''} the host's "
                     f"{', '.join(secrets)} (env_passthrough)")
    return lines


def _tool_lines(tool: Tool, workspace: Path, project: Path) -> list[str]:
    info = runner_overview(tool)
    runs = ", ".join(programs(tool)) or "?"
    lines = [f"    {tool.name} ({tool.risk}, {tool.runner.kind}) from {tool.source}: runs {runs}"]
    if info.get("docs_command"):
        lines.append(f"      docs: runs {json.dumps(info['docs_command'], ensure_ascii=False)} when the model reads "
                     "them, without asking")
    if info.get("env_passthrough"):
        lines.append(f"      receives the host's {', '.join(info['env_passthrough'])} (env_passthrough)")
    outside = _outside_cwd(tool, workspace, project)
    if outside is not None:
        lines.append(f"      cwd {outside}{OUTSIDE}")
    return lines
