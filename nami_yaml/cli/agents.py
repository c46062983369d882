"""``nami agents``: the project's named agents, what each may use and do."""

from __future__ import annotations

import click

from nami_yaml.app.named_agents import agent_registry, agent_rights
from nami_yaml.app.project import open_project
from nami_yaml.cli.common import config_option, handle_errors, prompt_trust
from nami_yaml.config.agents import load_agents
from nami_yaml.display import safe_json, visible
from nami_yaml.project_request import ProjectRequest


@click.command("agents")
@config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON array with every agent.")
@handle_errors
def agents(config: str | None, as_json: bool) -> None:
    """List this project's named agents (agent.yaml `agents:` and agents/NAME.yaml): each one's description,
    tools, rights and model. Run one with `nami run --agent NAME`; the others reach them as agent__NAME."""
    with open_project(ProjectRequest(config=config), trust=prompt_trust) as project:
        specs = load_agents(project.settings)
        rows = []
        for spec in specs.values():
            tools = [tool.name for tool in agent_registry(spec, project.registry)]
            # The rights that hold: an agent's own only where stricter than the project's (as `nami check` says).
            rows.append({"name": spec.name, "description": spec.description, "tools": tools,
                         "permissions": agent_rights(spec, project.settings), "declared_permissions": spec.permissions,
                         "rules": len(spec.rules),
                         "model": spec.model.get("name") or project.settings.model.name,
                         "subagents": list(spec.subagents), "source": spec.where})
    if as_json:
        click.echo(safe_json(rows, indent=2))
        return
    if not rows:
        click.echo("no named agents: agent.yaml has no `agents:` and there is no agents/ folder beside it")
        return
    for row in rows:
        rights = ", ".join(f"{risk}: {value}" + (f" (it says {row['declared_permissions'][risk]}: the project's "
                                                   f"{value} holds)" if row["declared_permissions"][risk] != value else "")
                           for risk, value in row["permissions"].items()) or "the project's"
        click.echo(visible(f"{row['name']}  {row['description']}  [{row['source']}]"))
        click.echo(visible(f"  tools: {', '.join(row['tools']) or 'none'}"))
        click.echo(visible(f"  rights: {rights}{'; ' + str(row['rules']) + ' rules' if row['rules'] else ''}; "
                           f"model: {row['model']}"
                           f"{'; sub-agents: ' + ', '.join(row['subagents']) if row['subagents'] else ''}"))
