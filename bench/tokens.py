"""Benchmark: what every request of the default agent carries before the conversation starts.

    python bench/tokens.py

Prints the system prompt and each default tool definition, in characters as sent and estimated tokens,
largest first, and the total against the budget of 4,200 characters (Pi's four tools and prompt weigh
about 4,300). Counted, not timed; tests/test_lean_requests.py asserts the same budget.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from nami_yaml.app import open_project
from nami_yaml.session.context import request_parts, total_chars
from nami_yaml.session.usage import estimate_tokens

BUDGET = 4_200


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"  # no agent.yaml: the defaults everyone starts with
        workspace.mkdir()
        project = open_project(cwd=workspace, env={"HOME": folder})
        parts = request_parts(project.system_prompt(), project.registry.definitions())
        docs = [tool.name for tool in project.registry if tool.docs is not None]
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
