"""JMESPath expressions (the AWS CLI's ``--query`` language) as tool files and task files write them: a tool's
``output.select`` and a batch check's ``answer_field``. Compiled once each; jmespath is imported only when an
expression is met."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1024)  # bounded: a select with parameters is a new expression per call
def compiled(expression: str) -> Any:
    """The parsed JMESPath expression (jmespath is imported only by tools that select)."""
    import jmespath

    return jmespath.compile(expression)


def expression_problem(expression: str) -> str | None:
    """Why ``expression`` is not a JMESPath expression, or None."""
    from jmespath.exceptions import JMESPathError

    try:
        compiled(expression)
    except JMESPathError as exc:
        first = str(exc).splitlines()[0].rstrip(":").removesuffix(", for expression")
        head, _, rest = first.partition(": ")
        if rest and head.lower() in ("invalid jmespath expression", "bad jmespath expression"):
            first = rest
        where = getattr(exc, "lex_position", None)
        at = f" (at character {where + 1})" if isinstance(where, int) and "column" not in first else ""
        return f"not a valid JMESPath expression: {first}{at}"
    return None
