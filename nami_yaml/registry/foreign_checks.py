"""Other tools' spellings pasted into a tool file, and braces an escape turned into something else.

People bring tools written for other agents and CLIs' own templates. What looks right there means
something else here, and would run silently wrong: ``[docker, ps, --format, "{{.Names}}"]`` gives docker
``{.Names}`` (``{{`` is nami's escape for one brace), ``{{ kind }}`` (Jinja) passes the text ``{ kind }``,
mcp-this's ``<<kind>>`` and llm-functions' ``$argc_kind`` are not nami's placeholders. Each is reported with
the spelling to write.
"""

from __future__ import annotations

import re

from nami_yaml.registry.draft import ToolDraft
from nami_yaml.runners.template import TemplateError, parse, walk_argv

# Go templates (docker, kubectl, helm, gh): a field (.Names), or an action on one ({{json .}}, {{range .x}}).
_GO_ACTIONS = frozenset({"json", "range", "if", "with", "index", "printf", "len", "end", "else", "template",
                         "define", "block", "join", "table", "upper", "lower", "title", "println"})
_SINGLE = re.compile(r"\{([^{}]*)\}")
_JINJA = re.compile(r"\{\{-?\s+([A-Za-z_][A-Za-z0-9_]*)(?:\s*\|[^{}]*)?\s+-?\}\}")
_MCP_THIS = re.compile(r"<<([A-Za-z_][A-Za-z0-9_-]*)>>")
_ARGC = re.compile(r"\$\{?argc_([A-Za-z_][A-Za-z0-9_]*)")
_FOREIGN_KEYS = {
    "cmd": "shellmcp's cmd: is nami's command: (an argv list, no shell) or script: (bash, values as $NAME)",
    "args": "shellmcp's args: are nami's parameters: (a JSON Schema object: properties, required)",
    "toolsets": "a HolmesGPT toolset: `nami import holmes FILE` writes nami tool files from it",
}


def check_foreign_spellings(draft: ToolDraft) -> None:
    for key, hint in _FOREIGN_KEYS.items():
        if key in draft.raw:
            draft.error((key,), hint, key=True)
    key = draft.runner_key
    templates: list[tuple[tuple[str | int, ...], str, str]] = []  # where, text, how a value is written there
    runner = draft.raw.get(key) if key else None
    templates += [((*at, *path), text, "{%s}") for at, argv in draft.argvs for path, text, _ in walk_argv(argv)]
    if draft.runner_kind == "script" and isinstance(runner, str):
        _check_script(draft, runner)
    stdin = draft.text("stdin")
    if stdin is not None and draft.runner_kind in ("command", "pipeline", "script"):
        templates.append((("stdin",), stdin, "{%s}"))
    for where, text, spelling in templates:
        _check_template(draft, where, text, spelling)


def _check_template(draft: ToolDraft, where: tuple[str | int, ...], text: str, spelling: str) -> None:
    for match in _MCP_THIS.finditer(text):
        name = match.group(1)
        if name in draft.properties:
            draft.error(where, f"<<{name}>> is mcp-this's placeholder; nami's is {spelling % name}")
    jinja = _JINJA.search(text)
    if jinja:
        name = jinja.group(1)
        if name in draft.properties:
            draft.error(where, f"{jinja.group(0)} is Jinja's placeholder, and here it passes the text "
                               f"{_unescaped(jinja.group(0))!r}: nami's is {spelling % name}")
        else:
            draft.error(where, f"{jinja.group(0)} passes the text {_unescaped(jinja.group(0))!r} (braces are "
                               "escaped by doubling: {{ gives one {); for the program to get {{ write {{{{")
        return
    if "{{" not in text or "jsonpath" in text.lower():
        return  # kubectl's JSONPath is written with single braces: -o 'jsonpath={.items[*]}' is what it means
    try:
        literal = "".join(piece.text for piece in parse(text) if piece.ref is None)
    except TemplateError:
        return  # reported by the placeholder checks
    for match in _SINGLE.finditer(literal):
        inner = match.group(1).strip()
        words = inner.split()
        if inner.startswith(".") or (words and words[0] in _GO_ACTIONS and (len(words) == 1 and words[0] in (
                "end", "else") or any(word.startswith(".") for word in words[1:]))):
            program = match.group(0)
            written = "{" + program + "}"  # the Go template meant: {{.Names}}, written with each brace doubled
            draft.error(where, f"the program gets {program}: {{{{ is nami's escape for one brace, so a Go "
                               f"template (docker, kubectl, helm) is written with four: "
                               f"{written.replace('{', '{{').replace('}', '}}')}")
            return


def _unescaped(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def _check_script(draft: ToolDraft, script: str) -> None:
    for match in _ARGC.finditer(script):
        name = match.group(1)
        if name not in draft.properties or re.search(rf"\bargc_{re.escape(name)}=", script):
            continue  # not a parameter, or set by the script itself (as `nami import llm-functions` writes it)
        message = f"$argc_{name} is llm-functions' variable; nami passes the parameter {name} as ${name}"
        if name in draft.required:
            draft.error((draft.runner_key or "script",), message + " (here the script would get it empty)")
        else:
            draft.warn((draft.runner_key or "script",), message)
    for match in _MCP_THIS.finditer(script):
        name = match.group(1)
        if name in draft.properties:
            draft.error((draft.runner_key or "script",),
                        f"<<{name}>> is mcp-this's placeholder; a script gets the parameter as \"${name}\"")
