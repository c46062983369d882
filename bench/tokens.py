"""Benchmark: what every request of the default agent carries before the conversation starts.

    python -m bench.tokens

Prints the system prompt and each default tool definition, in characters as sent and estimated tokens,
largest first, and the total against nami's budget of 4,200 characters (tests/test_lean_requests.py holds
it). Counted, not timed. In the table (`python -m bench`): the system prompt, the tool definitions and
their sum, and the same first request with every group of the ops library enabled (what `nami init`
selects on a machine with all the ops CLIs), each against Pi's, measured live from Pi's first request at
the fake server (bench/pi.py), or "not measured" and why.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import Row, Settings
from bench.pi import NotMeasured, PiWeight, measure_pi
from nami_yaml.app import open_project
from nami_yaml.registry.library import library_groups
from nami_yaml.session.context import Part, request_parts, total_chars
from nami_yaml.session.usage import estimate_tokens

BUDGET = 4_200


def default_parts(library: list[str] | None = None) -> tuple[list[Part], list[str]]:
    """The first request's parts with the defaults everyone starts with (no agent.yaml), plus the
    ``library`` groups named."""
    flags = {"tools.library": library} if library else None
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"
        workspace.mkdir()
        project = open_project(cwd=workspace, env={"HOME": folder}, flags=flags)
        parts = request_parts(project.system_prompt(), project.registry.definitions())
        docs = [tool.name for tool in project.registry if tool.docs is not None]
    return parts, docs


def measure(settings: Settings) -> list[Row]:
    parts, _ = default_parts()
    prompt = [p for p in parts if p.label == "system prompt"]
    tools = [p for p in parts if p.label != "system prompt"]
    pi = measure_pi(may_install=not settings.quick)
    groups = list(library_groups())
    everything, _ = default_parts(groups)
    return [*pi_rows(prompt, tools, pi), *library_rows(everything, len(groups), pi),
            files_row(settings.size(1000, 100), pi)]


def files_row(count: int, pi: PiWeight | NotMeasured) -> Row:
    """The first request of a project with ``count`` tool files of its own (bench/load_tools.py's), which
    past tools.files_on_demand are offered on demand, against Pi's whole first request."""
    from bench.load_tools import generated

    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"
        (workspace / "tools").mkdir(parents=True)
        generated(workspace / "tools", count)
        (workspace / "agent.yaml").write_text("tools: {files: [tools/]}\n")
        project = open_project(str(workspace / "agent.yaml"), cwd=workspace, env={"HOME": folder})
        chars = total_chars(request_parts(project.system_prompt(), project.registry.definitions()))
    baseline, name = (None, f"Pi: not measured ({pi.why})") if isinstance(pi, NotMeasured) else (
        pi.total, f"Pi {pi.version}, measured")
    return Row("tokens.files.chars", f"system prompt + tools of a project with {count:,} tool files (sent on "
                                     "demand past tools.files_on_demand), characters", chars, "chars", baseline, name,
               "≤ 1.0× Pi's", None if baseline is None else chars <= baseline)


def library_rows(parts: list[Part], groups: int, pi: PiWeight | NotMeasured) -> list[Row]:
    """The whole first request with every library group enabled, against Pi's whole first request."""
    chars = total_chars(parts)
    tools = len(parts) - 1  # all but the system prompt
    label = f"system prompt + default tools + the whole library ({groups} groups; {tools} tools in all)"
    if isinstance(pi, NotMeasured):
        baseline, name = None, f"Pi: not measured ({pi.why})"
    else:
        baseline, name = pi.total, f"Pi {pi.version}, measured"
    return [Row("tokens.library.chars", f"{label}, characters", chars, "chars", baseline, name, "≤ 1.0× Pi's",
                None if baseline is None else chars <= baseline),
            Row("tokens.library.tokens", f"{label}, estimated tokens", estimate_tokens(chars), "tokens",
                None if baseline is None else estimate_tokens(baseline),
                f"{name}, estimated the same way" if baseline is not None else name)]


def pi_rows(prompt: list[Part], tools: list[Part], pi: PiWeight | NotMeasured) -> list[Row]:
    """nami's system prompt, tools and their sum, each beside Pi's (or why Pi's was not measured)."""
    if isinstance(pi, NotMeasured):
        theirs: dict[str, int | None] = {"prompt": None, "tools": None, "total": None}
        names = dict.fromkeys(theirs, f"Pi: not measured ({pi.why})")
    else:
        theirs = {"prompt": pi.system_prompt, "tools": pi.tool_chars, "total": pi.total}
        names = {"prompt": f"Pi {pi.version}'s, measured", "tools": f"Pi {pi.version}'s {len(pi.tools)}, measured",
                 "total": f"Pi {pi.version}, measured"}
    rows = []
    for key, label, chosen in (("prompt", "system prompt", prompt),
                               ("tools", f"{len(tools)} default tool definitions", tools),
                               ("total", "system prompt + default tools", [*prompt, *tools])):
        chars, baseline = total_chars(chosen), theirs[key]
        rows.append(Row(f"tokens.{key}.chars", f"{label}, characters", chars, "chars", baseline, names[key]))
        rows.append(Row(f"tokens.{key}.tokens", f"{label}, estimated tokens", estimate_tokens(chars), "tokens",
                        None if baseline is None else estimate_tokens(baseline),
                        f"{names[key]}, estimated the same way" if baseline is not None else names[key]))
    total = rows[-2]
    total.target = "≤ 1.0× Pi's"
    total.met = None if total.baseline is None or total.value is None else total.value <= total.baseline
    return rows


def main() -> None:
    parts, docs = default_parts()
    width = max(len(p.label) for p in parts)
    print(f"{'':<{width}}  {'chars':>6}  {'~tokens':>7}")
    for part in parts:
        print(f"{part.label:<{width}}  {part.chars:>6,}  {part.tokens:>7,}")
    chars = total_chars(parts)
    print(f"{'total':<{width}}  {chars:>6,}  {estimate_tokens(chars):>7,}   budget {BUDGET:,} characters: "
          f"{'within' if chars <= BUDGET else 'OVER'}")
    if docs:
        print(f"read on demand (not sent): the docs of {', '.join(docs)}")


if __name__ == "__main__":
    main()
