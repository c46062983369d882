"""Benchmark: what every request of the default agent carries before the conversation starts.

    python -m bench.tokens

Prints the system prompt and each default tool definition, in characters as sent and estimated tokens,
largest first, and the total against the budget of 4,200 characters (Pi's four tools and prompt weigh
about 4,300). Counted, not timed; tests/test_lean_requests.py asserts the same budget. In the table
(`python -m bench`): the system prompt, the tool definitions and their sum, against Pi's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import Row, Settings
from nami_yaml.app import open_project
from nami_yaml.session.context import Part, request_parts, total_chars
from nami_yaml.session.usage import estimate_tokens

BUDGET = 4_200
PI_CHARS = 4_300  # Pi's system prompt and its four tools (read, write, edit, bash), as sent


def default_parts() -> tuple[list[Part], list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"  # no agent.yaml: the defaults everyone starts with
        workspace.mkdir()
        project = open_project(cwd=workspace, env={"HOME": folder})
        parts = request_parts(project.system_prompt(), project.registry.definitions())
        docs = [tool.name for tool in project.registry if tool.docs is not None]
    return parts, docs


def measure(settings: Settings) -> list[Row]:
    parts, _ = default_parts()
    prompt = [p for p in parts if p.label == "system prompt"]
    tools = [p for p in parts if p.label != "system prompt"]
    rows = []
    for key, label, chosen in (("prompt", "system prompt", prompt),
                               ("tools", f"{len(tools)} default tool definitions", tools),
                               ("total", "system prompt + default tools", parts)):
        chars = total_chars(chosen)
        rows.append(Row(f"tokens.{key}.chars", f"{label}, characters", chars, "chars"))
        rows.append(Row(f"tokens.{key}.tokens", f"{label}, estimated tokens", estimate_tokens(chars), "tokens"))
    rows[-2].baseline, rows[-2].baseline_label = PI_CHARS, "Pi's 4 tools and prompt"
    rows[-2].target, rows[-2].met = f"≤ {BUDGET:,} chars", rows[-2].value <= BUDGET
    rows[-1].baseline, rows[-1].baseline_label = estimate_tokens(PI_CHARS), "Pi, estimated the same way"
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
