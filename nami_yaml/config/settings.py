"""The effective configuration: command-line flags > NAMI_* environment > agent.yaml > user config >
defaults (and a provider preset), with the origin of every value kept for ``nami config``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from nami_yaml.config.effective import ConfigFile, Effective, env_scrub_rules_of
from nami_yaml.config.files import check_config, find_config, read_config, user_config_path
from nami_yaml.config.sandbox import combine as combine_sandbox
from nami_yaml.config.targets import project_only_problems
from nami_yaml.errors import Problem, SpecError
from nami_yaml.model.presets import DEFAULT_PRESET, PRESETS, PRICES_AS_OF, get_preset  # plain data, no openai
from nami_yaml.project_request import ProjectRequest
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.setting_defaults import SECTIONS

DEFAULT_BUILTINS = ["read_file", "write_file", "edit_file", "list_dir", "grep", "glob", "bash", "fetch_url"]

# The defaults as `nami config` lists them: nami_yaml.setting_defaults, and sandbox_settings' for ``sandbox:``.
DEFAULTS: dict[str, Any] = {**copy.deepcopy(SECTIONS), "sandbox": SandboxSettings().as_mapping()}

ENV_KEYS = {"NAMI_MODEL": "model.name", "NAMI_BASE_URL": "model.base_url"}
# Not merged: each file's rules are kept with their origin (user rules may only tighten a project's; see
# nami_yaml.policy.layers), read from Effective.files.
SEPARATE_KEYS = frozenset({"rules"})
# Values that are one thing, however nested: a schema from the user config and one from agent.yaml are
# never merged into a third.
WHOLE_KEYS = frozenset({"answer_schema"})
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def _set(values: dict[str, Any], sources: dict[str, str], dotted: str, value: Any, origin: str) -> None:
    parts = dotted.split(".")
    node = values
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    sources[dotted] = origin
    prefix = dotted + "."
    for key in [k for k in sources if k.startswith(prefix)]:
        sources[key] = origin


def _merge(values: dict[str, Any], sources: dict[str, str], layer: Mapping[str, Any], origin: str,
           prefix: str = "") -> None:
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        # An MCP server defined in both files is the later file's, whole: never a command from one and a url
        # (or the env) from the other.
        whole = key in ("options", "quirks") or prefix == "mcp_servers." or dotted in WHOLE_KEYS
        if isinstance(value, dict) and not whole and isinstance(values.get(key), dict):
            _merge(values[key], sources, value, origin, dotted + ".")
            continue
        values[key] = copy.deepcopy(value)
        for stale in [k for k in sources if k == dotted or k.startswith(dotted + ".")]:
            del sources[stale]
        sources.update(_leaf_sources({key: value}, origin, prefix))


def _leaf_sources(values: Mapping[str, Any], origin: str, prefix: str = "") -> dict[str, str]:
    out = {}
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in ("options", "quirks") and dotted not in WHOLE_KEYS:
            out.update(_leaf_sources(value, origin, dotted + "."))
        else:
            out[dotted] = origin
    return out


def load_settings(request: ProjectRequest, *, problems: list[Problem] | None = None) -> Effective:
    """Build the effective settings of ``request``'s project. Raises SpecError/ConfigError for bad files.
    ``request.discover`` False: no agent.yaml is looked for (``nami mcp serve --tools``); ``request.config``
    still names one. ``problems``: the config files' problems are added to it instead of raised, and the
    settings are built from what of them is valid (for ``nami check``, which reports everything in one run)."""
    env, cwd, config = request.environment, request.folder, request.config
    values = copy.deepcopy(DEFAULTS)
    sources = _leaf_sources(values, "default")
    files: list[ConfigFile] = []

    def read(path: Path) -> ConfigFile | None:
        if problems is None:
            return read_config(path, env)
        loaded, found = check_config(path, env)
        problems.extend(found)
        return loaded

    user = user_config_path(env)
    user_file = read(user) if request.user_config and user.is_file() else None
    if user_file is not None:
        misplaced = project_only_problems(user_file)
        if misplaced:
            raise SpecError(misplaced)
        files.append(user_file)
    path, how = find_config(config, env, cwd) if request.discover or config else (None, "not looked for")
    project_file = read(path) if path is not None else None
    if project_file is not None:
        files.append(project_file)
    for loaded in files:
        _merge(values, sources, {k: v for k, v in loaded.data.items() if k not in SEPARATE_KEYS}, str(loaded.path))
    _join_tool_files(values, sources, files)
    if "workspace" not in values:
        # The project's folder, wherever in it nami was started: its tools' paths and cwd: are relative to it.
        project = path.resolve().parent if path is not None else cwd
        _set(values, sources, "workspace", str(project), "default: the folder of agent.yaml" if path is not None
             else "default: the current folder")
    for name, dotted in ENV_KEYS.items():
        if env.get(name):
            _set(values, sources, dotted, env[name], f"${name}")
    for dotted, value in request.flags.items():
        if value is not None:
            _set(values, sources, dotted, value, "command line")

    model = values["model"]
    provider_chosen = sources.get("model.provider") != "default"
    if "base_url" not in model and env.get("OPENAI_BASE_URL") and not provider_chosen:
        # Honoured only when nothing chose an endpoint: `provider: ollama` in a file wins over it.
        _set(values, sources, "model.base_url", env["OPENAI_BASE_URL"], "$OPENAI_BASE_URL")
        _set(values, sources, "model.provider", "custom", "$OPENAI_BASE_URL")
    provider = model.get("provider", DEFAULT_PRESET)
    preset = get_preset(provider) if provider in PRESETS else {}
    if _elsewhere(preset, model.get("base_url")):
        preset = _leave_hosted_preset(values, sources, provider, preset)
        provider = "custom"
    for key, preset_key in (("name", "model"), ("base_url", "base_url"), ("api_key_env", "api_key_env"),
                            ("context_window", "context_window")):
        if key not in model and preset.get(preset_key) is not None:
            _set(values, sources, f"model.{key}", preset[preset_key], f"preset {provider}")
    price = (preset.get("pricing") or {}).get(model.get("name"))
    if "pricing" not in model and price is not None:
        _set(values, sources, "model.pricing", dict(price), f"preset {provider} (list price of {PRICES_AS_OF})")
    if preset.get("quirks"):
        quirks = {**preset["quirks"], **(model.get("quirks") or {})}
        if sources.get("model.quirks") == "default":
            _set(values, sources, "model.quirks", quirks, f"preset {provider}")
        else:
            model["quirks"] = quirks  # the file's quirks on top of the preset's; the source stays the file

    _combine_sandbox(values, sources, user_file, project_file)
    _combine_approvals(values, sources, user_file, project_file)
    scrub = env_scrub_rules_of(files)
    if scrub.names or scrub.values:
        # Every file's patterns, not only the last one's: merging would let a project drop the user's.
        origin = ", ".join(str(f.path) for f in files if f.data.get("env_scrub"))
        _set(values, sources, "env_scrub", {"names": list(scrub.names), "values": list(scrub.values)}, origin)
    effective = Effective(values, sources, path, files, found_by=how,
                          user_config=user_file.path if user_file is not None else None, cwd=cwd)
    effective.api_key, effective.api_key_source = _api_key(model, env, preset)
    return effective


def with_values(effective: Effective, changes: Mapping[str, Any], origin: str) -> Effective:
    """The same settings with some dotted keys set (a named agent's model and limits, say)."""
    values, sources = copy.deepcopy(effective.values), dict(effective.sources)
    for dotted, value in changes.items():
        _set(values, sources, dotted, value, origin)
    changed = Effective(values, sources, effective.config_path, effective.files, effective.api_key,
                        effective.api_key_source, effective.found_by, effective.user_config, cwd=effective.cwd)
    if "model.name" in changes:
        return with_model(changed, changes["model.name"], origin)
    return changed


def with_model(effective: Effective, name: str, origin: str = "chosen in chat") -> Effective:
    """The same settings talking to model ``name``: same endpoint and key; priced by the provider's list
    price for that name unless agent.yaml set model.pricing (no price known is better than a wrong one)."""
    values, sources = copy.deepcopy(effective.values), dict(effective.sources)
    _set(values, sources, "model.name", name, origin)
    if sources.get("model.pricing", "").startswith("preset"):
        values["model"].pop("pricing", None)
        sources.pop("model.pricing", None)
        provider = values["model"].get("provider", DEFAULT_PRESET)
        price = (get_preset(provider).get("pricing") or {}).get(name) if provider in PRESETS else None
        if price is not None:
            _set(values, sources, "model.pricing", dict(price), f"preset {provider} (list price of {PRICES_AS_OF})")
    return Effective(values, sources, effective.config_path, effective.files, effective.api_key,
                     effective.api_key_source, effective.found_by, effective.user_config, cwd=effective.cwd)


def _elsewhere(preset: Mapping[str, Any], base_url: str | None) -> bool:
    """Whether ``base_url`` leaves a hosted provider's endpoint (DeepSeek's, OpenAI's: the presets with a key
    variable): $NAMI_BASE_URL at a llama.cpp server, say, with agent.yaml's `provider: deepseek`."""
    return bool(preset.get("api_key_env") and base_url and _host(base_url) != _host(preset["base_url"]))


def _leave_hosted_preset(values: dict[str, Any], sources: dict[str, str], provider: str,
                         preset: dict[str, Any]) -> dict[str, Any]:
    """The endpoint is not ``provider``'s own: what the preset knows of that host (its list prices, its context
    window, its key variable, which would send the provider's key elsewhere) does not apply; the provider is
    ``custom``. What remains of the preset: the model name, when nothing else gave one (a local server
    answers any), and its quirks, which describe the protocol, where the provider was chosen for this
    endpoint: in the same place as the URL (a proxy of OpenAI's API on localhost), or for a remote one. Where
    only the URL was changed to a local server ($NAMI_BASE_URL over `nami init`'s DeepSeek section), or
    nobody chose the provider, the default quirks."""
    local = _host(values["model"]["base_url"]) in LOCAL_HOSTS
    chosen_here = sources.get("model.provider") != "default" and (
        sources.get("model.provider") == sources.get("model.base_url") or not local)
    _set(values, sources, "model.provider", "custom",
         f"{sources.get('model.base_url', 'model.base_url')}: not the {provider} endpoint")
    kept: dict[str, Any] = {"model": preset.get("model")}
    if chosen_here:
        kept["quirks"] = preset["quirks"]
    return kept


def _join_tool_files(values: dict[str, Any], sources: dict[str, str], files: list[ConfigFile]) -> None:
    """The user config's tool files and library tools and the project's together: a team library in the user
    config stays available in every project. A tool name defined in both is a duplicate the loader reports;
    a library name given in both counts once."""
    for key in ("files", "library"):
        setting = [f for f in files if key in (f.data.get("tools") or {})]
        if len(setting) > 1:
            joined = [item for f in setting for item in f.data["tools"][key]]
            _set(values, sources, f"tools.{key}", list(dict.fromkeys(joined)) if key == "library" else joined,
                 " + ".join(str(f.path) for f in setting))


def _combine_sandbox(values: dict[str, Any], sources: dict[str, str], user: ConfigFile | None,
                     project: ConfigFile | None) -> None:
    """``sandbox:`` by config/sandbox.py's rules, not merged file over file: a project narrows the user's."""
    layers = [f for f in (user, project) if f is not None and isinstance(f.data.get("sandbox"), dict)]
    if not layers:
        return
    combined = combine_sandbox(user.data.get("sandbox") if user is not None else None,
                               project.data.get("sandbox") if project is not None else None)
    _set(values, sources, "sandbox", combined, " + ".join(str(f.path) for f in layers))


def _combine_approvals(values: dict[str, Any], sources: dict[str, str], user: ConfigFile | None,
                       project: ConfigFile | None) -> None:
    """``approvals:``: the project's over the user's, except that the user's may only tighten: the shorter
    ``timeout`` and ``expires`` count, and an approver the user config names keeps the user's token."""
    from nami_yaml.config.sections import duration_seconds

    layers = [(f, f.data["approvals"]) for f in (user, project) if f is not None
              and isinstance(f.data.get("approvals"), dict)]
    if len(layers) < 2:
        return
    (user_file, mine), (_, theirs) = layers
    for key in ("timeout", "expires"):
        if key in mine and (key not in theirs or duration_seconds(mine[key]) < duration_seconds(theirs[key])):
            _set(values, sources, f"approvals.{key}", mine[key], str(user_file.path))
    if mine.get("approvers"):
        _set(values, sources, "approvals.approvers", {**(theirs.get("approvers") or {}), **mine["approvers"]},
             " + ".join(str(f.path) for f, _ in layers))


def _host(url: str | None) -> str:
    return (urlparse(url).hostname or "").lower().rstrip(".") if url else ""  # "api.deepseek.com." is the same host


def _api_key(model: Mapping[str, Any], env: Mapping[str, str], preset: Mapping[str, Any]) -> tuple[str | None, str]:
    if env.get("NAMI_API_KEY"):
        return env["NAMI_API_KEY"], "$NAMI_API_KEY"
    key_env = model.get("api_key_env")
    if key_env and env.get(key_env):
        return env[key_env], f"${key_env}"
    host = _host(model.get("base_url"))
    # A provider's own endpoint gets only its own key: an OpenAI key is never sent to DeepSeek.
    foreign = any(_host(p["base_url"]) == host and p.get("api_key_env") not in (None, "OPENAI_API_KEY")
                  for p in PRESETS.values())
    if env.get("OPENAI_API_KEY") and not foreign:
        return env["OPENAI_API_KEY"], "$OPENAI_API_KEY"
    if host in LOCAL_HOSTS:
        return str(preset.get("api_key") or "no-key-needed"), "not needed (local server)"
    if preset.get("api_key"):  # servers such as vLLM accept any key
        return str(preset["api_key"]), "preset (no key needed)"
    return None, "unset"


def mask(secret: str | None) -> str:
    if not secret:
        return "(unset)"
    return secret[:3] + "…" + secret[-2:] if len(secret) > 8 else "***"
