"""``output:`` in a tool file, checked at load: `nami check` reports a JMESPath expression that does not
parse, an ``output.schema`` that is not a JSON Schema, and keys that cannot work, each at file:line:col."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.registry.loader import load_tools
from tests.helpers import nami, write

HEAD = "name: pods\ndescription: List pods.\nrisk: read\n"


def problems(workdir: Path, text: str) -> list[str]:
    _, found = load_tools([write(workdir / "tools" / "pods.yaml", HEAD + text)])
    return [str(p) for p in found]


def test_nami_check_reports_a_bad_expression_where_it_is(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  builtin: []\n  files: [tools]\n")
    write(workdir / "tools" / "pods.yaml", HEAD + "command: [kubectl, get, pods, -o, json]\noutput:\n"
                                                  "  format: json\n"
                                                  "  select: \"items[].{name: metadata.name\"\n")
    result = nami("check")
    assert result.exit_code == 1
    assert ("tools/pods.yaml:7:11: $.output.select: not a valid JMESPath expression: Incomplete expression "
            "(at character 29)") in result.output


def test_a_good_output_loads_onto_the_tool(workdir: Path) -> None:
    tools, found = load_tools([write(workdir / "t.yaml", HEAD + "command: [cat, x]\noutput:\n  format: jsonl\n"
                                                       "  select: '[].Names'\n  max_items: 5\n"
                                                       "  schema: {type: array}\n")])
    assert found == []
    assert tools[0].output is not None
    assert (tools[0].output.format, tools[0].output.select, tools[0].output.max_items) == ("jsonl", "[].Names", 5)
    assert tools[0].output.schema == {"type": "array"}


def test_output_schema_must_be_a_json_schema(workdir: Path) -> None:
    found = problems(workdir, "command: [cat, x]\noutput:\n  format: json\n  schema:\n    type: arry\n"
                              "    items: {$ref: 'https://example.com/s.json'}\n")
    assert any(":8:11: $.output.schema.type: not a valid JSON Schema: 'arry' is not one of" in p
               and "did you mean 'array'?" in p for p in found), found
    assert any("$.output.schema.items['$ref']: $ref 'https://example.com/s.json' points outside this schema" in p
               for p in found), found


def test_selecting_needs_a_format_to_read_with(workdir: Path) -> None:
    found = problems(workdir, "command: [cat, x]\noutput:\n  select: items\n  max_items: 3\n")
    assert [p.split(": ", 2)[1] for p in found] == ["$.output.select", "$.output.max_items"]
    assert "needs a format to read the output with (json, jsonl or lines)" in found[0]


def test_an_entry_point_shapes_its_own_value(workdir: Path) -> None:
    found = problems(workdir, "entrypoint: 'mod:fn'\noutput: {format: json}\n")
    assert len(found) == 1 and "an entry point returns its own value" in found[0]


def test_the_schema_of_output_itself(workdir: Path) -> None:
    found = problems(workdir, "command: [cat, x]\noutput: {format: yaml, max_items: 0, extra: 1}\n")
    text = "\n".join(found)
    assert "$.output.format: \"yaml\" is not one of" in text
    assert "$.output.max_items: 0 is less than the minimum of 1" in text
    assert "unknown key 'extra'" in text


def test_the_published_tool_schema_has_output(workdir: Path) -> None:
    import json

    result = nami("schema", "tool")
    output = json.loads(result.output)["$defs"]["tool"]["properties"]["output"]
    assert set(output["properties"]) == {"format", "select", "max_items", "schema", "grep", "lines", "head", "tail"}
    assert output["properties"]["format"]["enum"] == ["text", "json", "jsonl", "lines"]


def test_tools_show_says_how_the_output_is_shaped(workdir: Path) -> None:
    write(workdir / "t.yaml", HEAD + "command: [cat, x]\noutput: {format: json, select: 'items[].name', max_items: 9}\n")
    result = nami("tools", "show", "pods", "--tools", "t.yaml")
    assert result.exit_code == 0, result.output
    assert "output:     read as json; select items[].name; max_items 9 (the whole output saved" in result.output
