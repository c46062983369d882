"""The paths of this configuration where a write needs exec approval (see sensitive_paths.py)."""

from __future__ import annotations

import os
from pathlib import Path

from nami_yaml.app.toolset import tool_files
from nami_yaml.config.agents import AGENTS_FOLDER, prompt_files, read_agents
from nami_yaml.config.effective import Effective
from nami_yaml.config.files import user_config_path
from nami_yaml.config.loaded import AGENTS_SKILLS, loaded_files
from nami_yaml.paths import Resolver
from nami_yaml.sensitive_paths import ProtectedPaths
from nami_yaml.xdg import default_state_dir, user_cache_dir

CONFIG = "nami reads its configuration (tools, permissions, endpoint) from it"
TOOL_FOLDER = "a tool folder: its tool files are commands nami runs and its Python is imported by entry points"
MCP_SERVER = "an MCP server of agent.yaml runs from it"
TOOL_CODE = "a tool of agent.yaml runs its code from there"
NAMED_AGENTS = "named agents: each file there is an agent's configuration (its tools, rights and prompt)"


def protected_paths(effective: Effective, extra_tools: list[str] | None = None,
                    base: Path | None = None) -> ProtectedPaths:
    files: list[tuple[Path, str]] = [(config.path, CONFIG) for config in effective.files]
    files.append((user_config_path(os.environ), CONFIG))
    if effective.config_path is not None:
        files.append((effective.config_path, CONFIG))
    if effective.get("system_file"):
        files.append((Path(effective.get("system_file")), "it is the system prompt the model follows"))
    folders: list[tuple[Path, str]] = [
        (default_state_dir(), "nami keeps its state there (the trust store)"),
        (user_cache_dir(), "nami keeps the tool files it found valid there (what they say is read from it)"),
        (user_config_path(os.environ).parent, "nami's configuration folder"),
    ]
    resolve = Resolver()  # a thousand tool files are in a few folders
    tool_folders: set[str] = set()
    for file in tool_files(effective, extra_tools, base):
        resolved = resolve.text(os.fspath(file))
        files.append((resolved, TOOL_FOLDER))
        tool_folders.add(os.path.dirname(resolved))
    folders.extend((folder, TOOL_FOLDER) for folder in sorted(tool_folders))
    loaded = loaded_files(effective, project_only=True)
    for code, why in ((loaded.servers, MCP_SERVER), (loaded.tool_code, TOOL_CODE)):
        files.extend((file, why) for server in code for file in server.files)
        for folder in (folder for server in code for folder in server.folders):
            # The project's root holds everything: protecting it all would ask about every write. Trust
            # covers it (a change asks again before the code next runs), and a server's imports are vetted.
            if effective.config_path is None or folder != effective.config_path.parent.resolve():
                folders.append((folder, why))
    if effective.config_path is not None:
        # Named agents are configurations like agent.yaml: their files (also ones made later) and prompts.
        folders.append((effective.config_path.parent / AGENTS_FOLDER, NAMED_AGENTS))
        files.extend((prompt, "it is a named agent's system prompt") for prompt in prompt_files(read_agents(effective)[0]))
    # AGENTS.md and skills found by convention (docs/conventions.md) are instructions the model follows too.
    files.extend((file, "an AGENTS.md: it is in the system prompt the model follows") for file in loaded.instructions)
    conventional = [*loaded.skill_folders, Path.home() / AGENTS_SKILLS] if effective.instructions.agents_skills else []
    for folder in dict.fromkeys([*(Path(folder) for folder in effective.get("skills") or []), *conventional]):
        folders.append((Path(folder), "a skill folder: its SKILL.md is instructions the model follows"))
    return ProtectedPaths.build(files, folders)
