"""Templates that say what they do (issue 45, item 4), run for real with printf printing each argument on a
line: an enum mapped to argv elements (``map:``), a group switched on by a negated parameter (``{!name}``),
and a group repeated once per item of an array written inside an element (``["--label={labels}"]``). Each
is also refused at load where it would mean nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nami_yaml.registry.loader import check_tools
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor, write

FORMS = r"""
tools:
  - name: when
    description: The date, in a chosen format.
    risk: read
    parameters:
      type: object
      properties:
        format: {type: string, enum: [iso, unix], default: iso}
    map:
      format: {iso: [-u, "+%FT%TZ"], unix: ["+%s"]}
    command: [printf, "%s\n", "{format}"]
  - name: services
    description: Services of a namespace, or of all of them.
    risk: read
    parameters:
      type: object
      properties:
        namespace: {type: string}
        wide: {type: boolean, default: false}
    command: [printf, "%s\n", get, services, [-n, "{namespace}"], [-A, "{!namespace}"], [-o, name, "{!wide}"]]
  - name: labelled
    description: Repeat an option written with = once per item.
    risk: read
    parameters:
      type: object
      properties:
        labels: {type: array, items: {type: string}}
    command: [printf, "%s\n", ps, ["--label={labels}"]]
"""


def lines_of(ctx: RuntimeContext, tool: str, arguments: dict[str, Any]) -> list[str]:
    result = tool_executor(ctx, FORMS).prepare(tool, arguments).run()
    assert result.ok, result.content
    return result.content.splitlines()


@pytest.mark.parametrize(("arguments", "argv"), [
    ({"format": "iso"}, ["-u", "+%FT%TZ"]),
    ({"format": "unix"}, ["+%s"]),
    ({}, ["-u", "+%FT%TZ"]),
])
def test_an_enum_maps_to_the_elements_its_map_gives(ctx: RuntimeContext, arguments: dict[str, Any],
                                                     argv: list[str]) -> None:
    assert lines_of(ctx, "when", arguments) == argv


@pytest.mark.parametrize(("arguments", "argv"), [
    ({"namespace": "prod"}, ["get", "services", "-n", "prod", "-o", "name"]),
    ({}, ["get", "services", "-A", "-o", "name"]),
    ({"wide": True}, ["get", "services", "-A"]),
])
def test_a_negated_parameter_switches_its_group_on_when_it_is_off(ctx: RuntimeContext, arguments: dict[str, Any],
                                                                   argv: list[str]) -> None:
    assert lines_of(ctx, "services", arguments) == argv


def test_an_array_inside_an_element_repeats_its_group_per_item(ctx: RuntimeContext) -> None:
    assert lines_of(ctx, "labelled", {"labels": ["app=web", "$(touch x)"]}) == [
        "ps", "--label=app=web", "--label=$(touch x)"]
    assert lines_of(ctx, "labelled", {}) == ["ps"]


@pytest.mark.parametrize(("tool", "message"), [
    ("""parameters: {type: object, properties: {f: {type: string, enum: [a, b]}}, required: [f]}
map: {f: {a: [-x]}}
command: [date, "{f}"]""", "enum value \"b\" of 'f' is not mapped: add b: [...]"),
    ("""parameters: {type: object, properties: {f: {type: string, enum: [a]}}, required: [f]}
map: {f: {a: [-x], c: [-y]}}
command: [date, "{f}"]""", "'c' is not one of 'f''s enum values (a): no call can pass it"),
    ("""parameters: {type: object, properties: {f: {type: string}}, required: [f]}
map: {f: {a: [-x]}}
command: [date, "{f}"]""", "'f' has no enum: map: needs the values a call may pass listed"),
    ("""parameters: {type: object, properties: {f: {type: string, enum: [a]}}, required: [f]}
map: {f: {a: [-x]}}
command: [date, "--f={f}"]""", "'f' is mapped (map:), so it fills whole elements only"),
    ("""parameters: {type: object, properties: {f: {type: string, enum: [a]}}, required: [f]}
map: {f: {a: [-x]}}
script: date""", "map: picks the argv elements of a command: or pipeline:; a script tool has none"),
    ("""parameters: {type: object, properties: {ns: {type: string}}}
command: [kubectl, get, pods, "{!ns}"]""", "{!ns} switches an optional group on when 'ns' is off: put it in one"),
    ("""parameters: {type: object, properties: {ns: {type: string}}}
command: [kubectl, get, pods, ["--all={!ns}"]]""", "{!ns} renders nothing, it only switches its group on"),
    ("""parameters: {type: object, properties: {ns: {type: string}}}
command: [kubectl, get, pods, [-n, "{ns}"]]
stdin: "{!ns}\"""", "{!ns} switches an optional group of an argv on when 'ns' is not given; here it has no"),
])
def test_forms_that_would_mean_nothing_are_refused_at_load(tmp_path: Path, tool: str, message: str) -> None:
    path = write(tmp_path / "t.yaml", f"name: t\ndescription: A tool.\nrisk: read\n{tool}\n")
    _, problems = check_tools([path])
    assert any(message in problem.message and problem.is_error for problem in problems), problems


def test_a_negated_parameter_with_a_default_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "name: t\ndescription: A tool.\nrisk: read\nparameters: {type: object, "
                                      "properties: {ns: {type: string, default: web}}}\n"
                                      "command: [printf, \"%s\", [-n, \"{ns}\"], [-A, \"{!ns}\"]]\n")
    _, problems = check_tools([path])
    assert [(p.severity, p.message) for p in problems] == [
        ("warning", "{!ns} never switches its group on: 'ns' has the default \"web\", so it is never off")]


def test_an_array_written_with_its_option_suggests_both_spellings(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "name: t\ndescription: A tool.\nrisk: read\nparameters: {type: object, "
                                      "properties: {l: {type: array, items: {type: string}}}}\n"
                                      "command: [docker, ps, \"--label={l}\"]\n")
    _, problems = check_tools([path])
    assert any('write [--label, "{l}"] to repeat --label once per item (or ["--label={l}"] for --label=ITEM per item)' in p.message
               for p in problems), problems
