"""Jinja command templates (HolmesGPT, shellmcp) read with Jinja's own parser, never with regular expressions:
``Environment().parse()`` gives the template's tree, and only the shapes that have a plain meaning in nami
are accepted: text, ``{{ name }}``, ``{{ name | default('x') }}``, and ``{% if name %}…{% endif %}`` around
text and names (an optional group). Anything else (loops, else branches, calls, other filters) is named
as the reason the tool was not brought.

Jinja is the optional extra ``import`` (``pip install 'nami_yaml[import]'``), imported only here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nami_yaml.errors import ConfigError
from nami_yaml.importers.template import Optional, Piece, Text, Var


class JinjaMissing(ConfigError):
    """``nami import holmes`` or ``shellmcp`` without the ``import`` extra (Jinja's parser)."""


@dataclass
class Parsed:
    pieces: list[Piece] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)  # used outside any {% if %}, no default
    switches: list[str] = field(default_factory=list)  # only tested by {% if %}: booleans
    names: list[str] = field(default_factory=list)  # every parameter, in order of appearance
    problem: str = ""
    fixed: list[str] = field(default_factory=list)  # the toolset's configuration, written in at its default


def _jinja() -> Any:
    try:
        import jinja2
        import jinja2.nodes
    except ImportError:
        raise JinjaMissing("importing Jinja templates needs Jinja's parser: install 'nami_yaml[import]' "
                           "(pip install 'nami_yaml[import]')") from None
    return jinja2


def parse(source: str) -> Parsed:
    jinja2 = _jinja()
    nodes = jinja2.nodes
    parsed = Parsed()
    try:
        tree = jinja2.Environment(keep_trailing_newline=True).parse(source)
    except jinja2.TemplateSyntaxError as exc:
        parsed.problem = f"not a valid Jinja template: {exc.message} (line {exc.lineno})"
        return parsed
    tested: list[str] = []
    used: list[str] = []

    def output(node: Any, into: list, *, top: bool) -> str:
        for item in node.nodes:
            if isinstance(item, nodes.TemplateData):
                into.append(Text(item.data))
                continue
            fixed = _configured(item, nodes)
            if fixed is not None:
                into.append(Text(str(fixed[1])))
                parsed.fixed.append(f"{fixed[0]} fixed at its default {fixed[1]!r} (edit the file to change it)")
                continue
            name, default = _value(item, nodes)
            if name is None:
                return f"{{{{ … }}}} holds {type(item).__name__}, which has no plain meaning in a command"
            if default is not None:
                parsed.defaults[name] = default
            into.append(Var(name))
            used.append(name)
            if top and default is None and name not in parsed.required:
                parsed.required.append(name)
        return ""

    for node in tree.body:
        if isinstance(node, nodes.Output):
            why = output(node, parsed.pieces, top=True)
        elif isinstance(node, nodes.If) and isinstance(node.test, nodes.Name) and not node.elif_:
            body: list = []
            otherwise: list = []
            why = ""
            for inner, into in [(n, body) for n in node.body] + [(n, otherwise) for n in node.else_]:
                if not isinstance(inner, nodes.Output):
                    why = f"{{% if {node.test.name} %}} holds {type(inner).__name__}"
                    break
                why = why or output(inner, into, top=False)
            tested.append(node.test.name)
            parsed.pieces.append(Optional(node.test.name, tuple(body), tuple(otherwise) if node.else_ else None))
        else:
            why = f"the template uses {_shown(node, nodes)}, which has no plain meaning in a command"
        if why:
            parsed.problem = why
            return parsed
    parsed.names = list(dict.fromkeys(used + tested))
    parsed.switches = [name for name in dict.fromkeys(tested) if name not in used]
    parsed.required = [name for name in parsed.required if name not in tested]
    return parsed


def _value(item: Any, nodes: Any) -> tuple[str | None, Any]:
    if isinstance(item, nodes.Name):
        return item.name, None
    if (isinstance(item, nodes.Filter) and item.name in ("default", "d") and isinstance(item.node, nodes.Name)
            and len(item.args) == 1 and isinstance(item.args[0], nodes.Const)):
        return item.node.name, item.args[0].value
    return None, None


def _configured(item: Any, nodes: Any) -> tuple[str, Any] | None:
    """``{{ config.timeout | default(600) }}``: the toolset's configuration, which an admin sets: ``(name,
    default)``."""
    if (isinstance(item, nodes.Filter) and item.name in ("default", "d") and isinstance(item.node, nodes.Getattr)
            and isinstance(item.node.node, nodes.Name) and len(item.args) == 1
            and isinstance(item.args[0], nodes.Const)):
        return f"{item.node.node.name}.{item.node.attr}", item.args[0].value
    return None


def _shown(node: Any, nodes: Any) -> str:
    if isinstance(node, nodes.If):
        return "{% if %} with a test other than a name, or with elif/else"
    if isinstance(node, nodes.For):
        return "{% for %}"
    return f"{{% {type(node).__name__.lower()} %}}"
