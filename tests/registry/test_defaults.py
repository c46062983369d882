"""``default`` in real-world schemas (tests/registry/bfcl_style.yaml): ``default: null`` is no default,
everywhere; a default its own schema refuses is an error where nami renders it (command, script) and a
warning where it is documentation (entry points, MCP tools), and then it is not applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nami_yaml.registry.defaults import applied_defaults, apply_defaults, refused_defaults
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import check_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runtime import RuntimeContext

FUNCTIONS: list[dict[str, Any]] = yaml.safe_load(Path(__file__).with_name("bfcl_style.yaml").read_text())["functions"]
SCRIPT = 'printf %s "$NAMI_ARGS"'  # the arguments as the script gets them, every one used

REFUSED = {
    "find_restaurants": "$.parameters.properties.cuisine.default: default \"N/A\" is not valid for this parameter: "
                        "\"N/A\" is not one of: \"Italian\", \"Chinese\", \"Mexican\", \"Indian\", \"Japanese\"",
    "book_flight": "$.parameters.properties.nonstop.default: default \"false\" is not valid for this parameter: "
                   "expected boolean, got string \"false\"",
    "hotel_booking": "$.parameters.properties.amenities.default: default \"WiFi\" is not valid for this parameter: "
                     "expected array, got string \"WiFi\"",
}
NOT_APPLIED = "; nami does not apply it, so a call that leaves it out passes no value"


def tool_file(folder: Path, runner: dict[str, Any]) -> Path:
    path = folder / "bfcl.yaml"
    path.write_text(yaml.safe_dump({"tools": [{**f, **runner} for f in FUNCTIONS]}, sort_keys=False),
                    encoding="utf-8")
    return path


def found(folder: Path, runner: dict[str, Any]) -> tuple[dict[str, Tool], list[str]]:
    tools, problems = check_tools([tool_file(folder, runner)])
    return {t.name: t for t in tools}, [f"{p.severity}: {p.path}: {p.message}" for p in problems]


def in_tool(name: str, message: str) -> str:
    index = next(i for i, f in enumerate(FUNCTIONS) if f["name"] == name)
    return message.replace("$.parameters", f"$.tools[{index}].parameters", 1)


def test_as_entry_points_every_schema_loads_and_refused_defaults_are_warnings(workdir: Path) -> None:
    tools, problems = found(workdir, {"entrypoint": "builtins:dict"})
    assert set(tools) == {f["name"] for f in FUNCTIONS}
    assert problems == [f"warning: {in_tool(name, message)}{NOT_APPLIED}" for name, message in REFUSED.items()]


def test_as_scripts_refused_defaults_are_errors_and_null_defaults_are_fine(workdir: Path) -> None:
    tools, problems = found(workdir, {"script": SCRIPT})
    assert set(tools) == {f["name"] for f in FUNCTIONS} - set(REFUSED)
    assert problems == [f"error: {in_tool(name, message)}" for name, message in REFUSED.items()]


def test_as_a_command_a_null_default_is_no_default(workdir: Path, ctx: RuntimeContext) -> None:
    base = ("name: w\ndescription: d\nparameters: {type: object, required: [location], properties: "
            "{location: {type: string}, unit: {type: string, enum: [c, f], default: null}}}\n")
    (workdir / "a.yaml").write_text(base + "command: [weather, '{location}', '{unit}']\n", encoding="utf-8")
    (workdir / "b.yaml").write_text(base.replace("name: w", "name: v") + "command: [weather, '{location}', "
                                    "[--unit, '{unit}']]\n", encoding="utf-8")
    tools, problems = check_tools([workdir / "a.yaml", workdir / "b.yaml"])
    assert [f"{p.path}: {p.message}" for p in problems] == [
        "$.command[2]: 'unit' is optional with no default: put it in an optional group (a nested list, e.g. "
        "[--flag, \"{unit}\"]) or give it a default"]
    prepared = Executor(Registry(tools), ctx).prepare("v", {"location": "Oslo"})
    assert isinstance(prepared, PreparedToolCall) and prepared.plan()["argv"] == ["weather", "Oslo"]


@pytest.fixture
def entry_points(workdir: Path, ctx: RuntimeContext) -> Executor:
    tools, _ = found(workdir, {"entrypoint": "builtins:dict"})
    return Executor(Registry(tools.values()), ctx)


@pytest.mark.parametrize(("name", "given", "passed"), [
    # null defaults: nothing is passed, not None
    ("get_current_weather", {"location": "Oslo"}, {"location": "Oslo"}),
    ("get_stock_price", {"symbol": "AAPL"}, {"symbol": "AAPL"}),
    # refused defaults are not applied; valid ones are
    ("find_restaurants", {"location": "Denver, CO"}, {"location": "Denver, CO"}),
    ("book_flight", {"origin": "OSL", "destination": "CPH", "date": "2025-05-01"},
     {"origin": "OSL", "destination": "CPH", "date": "2025-05-01", "passengers": 1}),
    ("hotel_booking", {"location": "Paris", "nights": 2}, {"location": "Paris", "nights": 2}),
    ("calculate_triangle_area", {"base": 3, "height": 4}, {"base": 3, "height": 4, "unit": "units"}),
    # inside an object parameter alike
    ("search_events", {"city": "Rome", "filters": {}}, {"city": "Rome", "filters": {"free_only": False}}),
])
def test_an_entry_point_gets_only_the_defaults_nami_applies(entry_points: Executor, name: str,
                                                            given: dict[str, Any], passed: dict[str, Any]) -> None:
    prepared = entry_points.prepare(name, json.dumps(given))
    assert isinstance(prepared, PreparedToolCall), prepared
    assert prepared.arguments == passed
    result = prepared.run()
    assert result.ok and json.loads(result.content) == passed  # what the function really got


def test_a_value_the_model_passes_is_validated_as_ever(entry_points: Executor) -> None:
    refused = entry_points.execute("find_restaurants", {"location": "Denver", "cuisine": "N/A"})
    assert not refused.ok and "$.cuisine: \"N/A\" is not one of" in refused.content


def test_a_script_sees_no_variable_and_no_null_for_a_null_default(workdir: Path, ctx: RuntimeContext) -> None:
    tools, _ = found(workdir, {"script": SCRIPT})
    result = Executor(Registry(tools.values()), ctx).execute("get_current_weather", {"location": "Oslo"})
    assert result.ok, result.content
    assert json.loads(result.content) == {"location": "Oslo"}


def test_the_definition_keeps_the_schema_as_written(workdir: Path) -> None:
    tools, _ = found(workdir, {"entrypoint": "builtins:dict"})
    sent = tools["find_restaurants"].definition()["function"]["parameters"]["properties"]
    assert sent["price_range"]["default"] is None and sent["cuisine"]["default"] == "N/A"


def test_refused_defaults_and_applied_defaults_of_a_bare_schema() -> None:
    schema = next(f for f in FUNCTIONS if f["name"] == "book_flight")["parameters"]
    assert [(path, message) for path, message in refused_defaults(schema)] == [
        (("properties", "nonstop", "default"), REFUSED["book_flight"].split(": ", 1)[1])]
    assert applied_defaults(schema).values == {"passengers": 1}
    nested = {"type": "object", "$defs": {"n": {"type": "integer", "minimum": 0}}, "properties": {
        "a": {"$ref": "#/$defs/n", "default": -1}, "b": {"$ref": "#/$defs/n", "default": 2},
        "c": {"type": ["string", "null"], "default": None}}}
    assert apply_defaults(nested, {}) == {"b": 2}  # through a $ref; null is no default even where null is valid
    assert [path for path, _ in refused_defaults(nested)] == [("properties", "a", "default")]

