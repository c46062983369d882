"""``nami context``: what each request sends before the conversation starts, and what that costs."""

from __future__ import annotations

import json

import click

from nami_yaml.app.project import Project, open_project
from nami_yaml.cli.common import config_option, handle_errors, prompt_trust, report_notices, tools_option
from nami_yaml.display import visible
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.library import ShapingSample, shaping_samples
from nami_yaml.session.context import request_parts, total_chars
from nami_yaml.session.cost import Pricing, money
from nami_yaml.session.usage import CHARS_PER_TOKEN, estimate_tokens


@click.command("context")
@config_option
@tools_option
@click.option("--target", metavar="NAME",
              help="Count the requests of `nami run --target NAME`: targeted tools are sent without their target parameter.")
@click.option("--json", "as_json", is_flag=True, help="The parts as JSON.")
@handle_errors
def context(config: str | None, extra_tools: tuple[str, ...], target: str | None, as_json: bool) -> None:
    """Show what every request sends before the conversation: the system prompt and each tool definition
    (MCP servers' too, once agent.yaml is trusted), in characters (as sent) and estimated tokens, largest
    first, with the total and its cost."""
    with open_project(ProjectRequest(config=config, tools=tuple(extra_tools), target=target), trust=prompt_trust,
                      tool_servers=True) as project:
        report_notices(project)  # (the MCP servers' tools count too)
        show_context(project, as_json, target)


def show_context(project: Project, as_json: bool, target: str | None = None) -> None:
    parts = request_parts(project.system_prompt(), project.registry.definitions())
    chars = total_chars(parts)
    tokens = estimate_tokens(chars)
    pricing = Pricing.from_settings(project.settings.model.pricing)
    on_demand = [t.name for t in project.registry if t.docs is not None]
    skills = list(project.context.skills)
    groups = project.registry.groups()
    loaded_chars = total_chars(request_parts(project.system_prompt(), project.registry.all_definitions()))
    shaped = shaping_samples(project.registry)
    if as_json:
        click.echo(json.dumps({"parts": [{"label": p.label, "chars": p.chars, "tokens": p.tokens} for p in parts],
                               "chars": chars, "tokens": tokens, "target": target,
                               "cost": None if pricing is None else pricing.cost(tokens, 0, 0),
                               "context_window": project.settings.model.context_window,
                               "docs_on_demand": on_demand, "skills": skills,
                               "tool_groups_on_demand": groups, "chars_with_every_group_loaded": loaded_chars,
                               "shaped_output": [{"tool": s.tool, "before": s.before, "after": s.after}
                                                 for s in shaped]}, indent=2))
        return
    width = max(len(p.label) for p in parts)
    click.echo(f"{'':<{width}}  {'chars':>7}  {'~tokens':>7}")
    for part in parts:
        click.echo(visible(f"{part.label:<{width}}  {part.chars:>7,}  {part.tokens:>7,}"))
    click.echo(f"{'total':<{width}}  {chars:>7,}  {tokens:>7,}")
    notes = [f"tokens estimated at {CHARS_PER_TOKEN} characters each", _window_note(project, tokens)]
    if pricing is not None:
        notes.append(f"about {money(pricing.cost(tokens, 0, 0))} per request uncached, "
                     f"{money(pricing.cost(tokens, tokens, 0))} from the prompt cache")
    unsent = [f"the docs of {len(on_demand)} tool{'s' if len(on_demand) != 1 else ''}"] if on_demand else []
    if skills:
        unsent.append(f"the {'bodies' if len(skills) != 1 else 'body'} of {len(skills)} skill{'s' if len(skills) != 1 else ''}")
    if unsent:
        notes.append(f"not sent: {' and '.join(unsent)}, read on demand")
    click.echo("; ".join(notes))
    if target is not None:
        click.echo(_pinned(project, target))
    if groups:
        count = sum(len(names) for names in groups.values())
        click.echo(f"sent on demand: {count} tool{'s' if count != 1 else ''} of {len(groups)} group"
                   f"{'s' if len(groups) != 1 else ''} ({', '.join(groups)}), loaded by the model with load_tools; "
                   f"with every group loaded a request starts with {loaded_chars:,} characters (~"
                   f"{estimate_tokens(loaded_chars):,} tokens)")
    show_shaping(shaped)


def _window_note(project: Project, tokens: int) -> str:
    window = project.settings.model.context_window
    if not window:  # a local or custom server: nothing is assumed (docs/config.md, context_window)
        return "the model's context window is not known (set model.context_window to the server's, e.g. llama.cpp's -c)"
    return f"{tokens / window:.0%} of the model's {window:,}-token context window"


def _pinned(project: Project, target: str) -> str:
    targeted = [t.name for t in project.registry if t.targeted]
    if not targeted:
        return f"every call of a targeted tool runs on target {visible(target)} (--target); no tool here runs on targets"
    one = len(targeted) == 1
    return (f"every call of a targeted tool runs on target {visible(target)} (--target): {', '.join(targeted)} "
            f"{'is' if one else 'are'} sent without {'its' if one else 'their'} target parameter")


def show_shaping(samples: list[ShapingSample]) -> None:
    """What the tools that shape their output (`output:`) make of a typical result, recorded."""
    if not samples:
        return
    click.echo("shaped tool output, a typical result (recorded) before and after:")
    width = max(len(s.tool) for s in samples)
    for sample in samples:
        times = f"{sample.before / sample.after:.0f}× smaller" if sample.after else "nothing left"
        click.echo(visible(f"  {sample.tool:<{width}}  {sample.before:>9,} → {sample.after:>7,} bytes  ({times})"))
