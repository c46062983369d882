"""The typed settings (config/sections.py): each value cast once, each default written once
(nami_yaml/setting_defaults.py), the same default in agent.yaml's JSON Schema, and no dotted reads of a
setting outside the settings modules."""

from __future__ import annotations

import ast
import inspect
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from nami_yaml.agent import AgentLoop
from nami_yaml.app.project import tool_settings
from nami_yaml.config.effective import Effective
from nami_yaml.config.sections import Sections
from nami_yaml.config.settings import DEFAULTS, load_settings, with_model, with_values
from nami_yaml.model import DEFAULT_PRESET
from nami_yaml.model.client import OpenAIChatModel
from nami_yaml.policy.permissions import DEFAULT_PERMISSIONS
from nami_yaml.project_request import ProjectRequest
from nami_yaml.runners.process import ProcessRequest
from nami_yaml.runtime import ToolSettings
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.session.compaction import CompactionSettings

PACKAGE = Path(__file__).resolve().parents[2] / "nami_yaml"
SCHEMA = PACKAGE / "spec" / "schemas" / "agent.schema.json"
# Where a setting may be read by its dotted name: the module that merges the layers (and Effective.get).
SETTINGS_MODULES = {PACKAGE / "config" / "settings.py", PACKAGE / "config" / "effective.py"}
# Defaults the schema does not repeat: free-form maps, nothing an editor could usefully show.
NOT_IN_SCHEMA = {"model.options", "model.quirks"}


def leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def schema_defaults() -> dict[str, Any]:
    """Every ``default`` under the schema's top-level ``properties`` (settings, not ``$defs``), by dotted key."""
    found: dict[str, Any] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, sub in (node.get("properties") or {}).items():
            if "default" in sub:
                found[f"{prefix}{key}"] = sub["default"]
            walk(sub, f"{prefix}{key}.")

    walk(json.loads(SCHEMA.read_text(encoding="utf-8")), "")
    return found


def default_effective() -> Effective:
    return load_settings(ProjectRequest(env={}, cwd=Path("/nonexistent"), user_config=False, discover=False))


def typed(sections: Sections, dotted: str) -> Any:
    node: Any = sections
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def test_every_default_is_in_the_schema_with_the_same_value() -> None:
    ours = {k: v for k, v in leaves(DEFAULTS).items() if k not in NOT_IN_SCHEMA}
    theirs = schema_defaults()
    assert {k: theirs.get(k, "(no default in the schema)") for k in ours} == ours
    assert set(theirs) <= set(ours), "a schema default nami does not have"
    assert set(leaves(DEFAULTS)) >= NOT_IN_SCHEMA


def test_the_typed_sections_hold_the_defaults_cast() -> None:
    sections = Sections.from_values({})  # nothing set: every section from the defaults alone
    assert Sections.from_values(DEFAULTS) == sections
    for dotted, value in leaves(DEFAULTS).items():
        got = typed(sections, dotted)
        expected = tuple(value) if isinstance(value, list) else value
        assert got == expected, dotted
        assert type(got) is type(expected) or isinstance(value, (int, float)), dotted
    assert isinstance(sections.model.timeout, float) and isinstance(sections.limits.tool_timeout, float)
    assert sections.model.name is None or isinstance(sections.model.name, str)
    assert sections.limits.max_cost is None and sections.audit.path is None and sections.tools.library == ()


def test_an_effective_built_by_hand_falls_back_to_the_defaults() -> None:
    effective = Effective({"limits": {"max_steps": "7"}}, {}, None)
    assert effective.limits.max_steps == 7 and effective.limits.max_output == DEFAULTS["limits"]["max_output"]
    assert effective.model.stream is True and effective.sandbox == SandboxSettings()


def test_changed_settings_are_new_typed_values() -> None:
    effective = default_effective()
    assert effective.limits.max_steps == 50
    changed = with_values(effective, {"limits.max_steps": 3, "model.timeout": 5}, "agent x")
    assert (changed.limits.max_steps, changed.model.timeout) == (3, 5.0)
    assert effective.limits.max_steps == 50  # the first is unchanged, its sections too
    assert with_model(changed, "other").model.name == "other"


def test_the_lower_layers_defaults_are_the_settings() -> None:
    limits, compaction = default_effective().limits, default_effective().compaction
    loop = {f.name: f.default for f in fields(AgentLoop)}
    assert (loop["max_steps"], loop["max_parallel_tools"], loop["max_tool_calls_per_turn"]) == (
        limits.max_steps, limits.max_parallel_tools, limits.max_tool_calls_per_turn)
    assert ToolSettings() == tool_settings(default_effective())
    assert CompactionSettings() == CompactionSettings(compaction.enabled, compaction.threshold, compaction.reserve,
                                                      compaction.keep_recent)
    assert {k: v for k, v in DEFAULT_PERMISSIONS.items() if k != "read"} == default_effective().permissions.as_mapping()
    assert SandboxSettings().as_mapping() == DEFAULTS["sandbox"]
    model = default_effective().model
    client = inspect.signature(OpenAIChatModel.__init__).parameters
    assert (client["stream"].default, client["max_retries"].default, client["timeout"].default,
            client["max_response_bytes"].default) == (model.stream, model.retries, model.timeout,
                                                      limits.max_response_bytes)
    process = {f.name: f.default for f in fields(ProcessRequest)}
    assert (process["timeout"], process["max_output"], process["max_saved"]) == (
        limits.tool_timeout, limits.max_output, limits.max_saved_output)
    assert model.provider == DEFAULT_PRESET


def dotted_gets(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    """``x.get("a.b", ...)`` calls with a dotted string literal for a key."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                and "." in node.args[0].value):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_settings_are_read_typed_outside_the_settings_modules() -> None:
    # effective.limits.max_steps, not effective.get("limits.max_steps"): cast once, and a typo fails loudly.
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path not in SETTINGS_MODULES
             for hit in dotted_gets(path)]
    assert found == []


def test_the_scan_finds_dotted_gets(tmp_path: Path) -> None:
    example = tmp_path / "example.py"
    example.write_text('a = settings.get("limits.max_steps")\nb = settings.get("workspace")\n'
                       'c = project.settings.get("model.name", None)\nd = get("model.name")\n', encoding="utf-8")
    assert dotted_gets(example, tmp_path) == ["example.py:1: settings.get('limits.max_steps')",
                                              "example.py:3: project.settings.get('model.name', None)"]
