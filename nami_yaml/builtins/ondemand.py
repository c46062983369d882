"""tool_docs, skill and load_tools: what the model reads only when it needs it, so it is not sent with every
request (a tool's long docs, a skill's body, an on-demand group's tool definitions).

A tool's docs are a file next to its YAML, or the output of a command (``[kubectl, explain, pods]``) run
through the same process path as the tool itself: its working folder and environment rules, a timeout,
and capped output.
"""

from __future__ import annotations

from nami_yaml.builtins.skill_tools import files_note, read_skill_file, use_tools
from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runners.base import build_invocation
from nami_yaml.runners.options import DocSource
from nami_yaml.runtime import RuntimeContext
from nami_yaml.spec.validate import did_you_mean

DOCS_MAX_BYTES = 1_000_000  # read at most this much of a docs file; the result is capped further


def tool_docs(name: str, *, ctx: RuntimeContext) -> ToolResult:
    source = ctx.tool_docs.get(name)
    if source is None:
        known = sorted(ctx.tool_docs)
        raise ToolError(f"no docs for {name!r}{did_you_mean(name, known)}. Tools with docs: "
                        f"{', '.join(known) or 'none'}")
    return read_docs(name, source, ctx)


def read_docs(name: str, source: DocSource, ctx: RuntimeContext) -> ToolResult:
    if source.file is not None:
        try:
            with open(source.file, "rb") as file:
                data = file.read(DOCS_MAX_BYTES + 1)
        except OSError as exc:
            raise ToolError(f"cannot read the docs of {name}: {exc.strerror or exc}") from None
        text = data[:DOCS_MAX_BYTES].decode("utf-8", "replace")
        if len(data) > DOCS_MAX_BYTES:
            text += f"\n[docs cut at {DOCS_MAX_BYTES:,} bytes]"
        return ToolResult(text)
    assert source.command is not None
    invocation = build_invocation(name, list(source.command), source.options, ctx, stdin=None,
                                  label=f"docs of {name}")
    result = invocation.run()
    details = result.details
    printed = bool(result.streams and (result.streams.stdout or result.streams.stderr))
    if not result.ok and printed and not details.get("timed_out") and not details.get("interrupted"):
        # Help commands often exit non-zero after printing their help (`git log -h` exits 129): the text
        # is what was asked for. The exit code stays in the content.
        result.ok = True
    return result


def skill(name: str, file: str | None = None, *, ctx: RuntimeContext) -> str:
    """A skill's body (and its files' names; the tools its allowed-tools names loaded), or one of its files
    by relative path (builtins/skill_tools.py). Nothing of the skill runs."""
    found = ctx.skills.get(name)
    if found is None:
        known = sorted(ctx.skills)
        raise ToolError(f"no skill {name!r}{did_you_mean(name, known)}. Skills: {', '.join(known) or 'none'}")
    if file is not None:
        return read_skill_file(found, file)
    try:
        body = found.body()
    except (OSError, ValueError) as exc:
        raise ToolError(f"cannot read skill {name}: {exc}") from None
    # The specification's compatibility says what the skill needs (a product, packages, the network): the
    # model reads it with the body, before it relies on the skill.
    compatibility = getattr(found, "compatibility", None)
    needs = f"\nCompatibility: {compatibility}" if compatibility else ""
    return f"{body}\n\n(Skill folder: {found.folder}){needs}{files_note(found)}{use_tools(found, ctx)}"


def load_tools(groups: list[str], *, ctx: RuntimeContext) -> str:
    """Add on-demand groups' definitions to the tools sent from the next request on."""
    known = list(ctx.tool_groups)
    unknown = [group for group in groups if group not in ctx.tool_groups]
    if unknown:
        raise ToolError(f"no tool group {unknown[0]!r}{did_you_mean(unknown[0], known)}. Groups: "
                        f"{', '.join(known) or 'none'}")
    new = ctx.loaded_groups.add(groups)
    lines = [f"{group}: {', '.join(ctx.tool_groups[group])}" for group in groups]
    state = "Loaded" if new else "Already loaded"
    return f"{state} (their definitions are in your tools now): " + "; ".join(lines)
