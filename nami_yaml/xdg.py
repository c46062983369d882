"""Where nami keeps its own files: the home folder and the XDG base folders (state, data, config, cache).

A leaf: the trust store, sessions, the audit log, saved output and the sandbox (which hides these folders
from tools) all find them here.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from pathlib import Path


def home_folder(env: Mapping[str, str] | None = None) -> Path:
    """$HOME if it is an absolute path, else the home folder of the user's password entry."""
    env = os.environ if env is None else env
    home = env.get("HOME", "")
    if os.path.isabs(home):
        return Path(home)
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return Path(os.path.expanduser("~"))


def xdg_folder(name: str, default: str, env: Mapping[str, str] | None = None) -> Path:
    """An XDG base folder: ``$name`` when absolute, else ``~/default``.

    The XDG spec says relative values are invalid and must be ignored. Taking them would let the current
    folder (a cloned repository) decide where nami's trust store and user config are.
    """
    env = os.environ if env is None else env
    value = env.get(name, "")
    return Path(value) if os.path.isabs(value) else home_folder(env) / default


def default_state_dir(env: Mapping[str, str] | None = None) -> Path:
    """nami's state: the trust store, the audit log, saved output, MCP server logs."""
    return xdg_folder("XDG_STATE_HOME", ".local/state", env) / "nami"


def user_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """nami's folder for the user's data (sessions): ``$XDG_DATA_HOME/nami``, else ``~/.local/share/nami``."""
    return xdg_folder("XDG_DATA_HOME", ".local/share", env) / "nami"


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's nami configuration: ``$XDG_CONFIG_HOME/nami``, else ``~/.config/nami``."""
    return xdg_folder("XDG_CONFIG_HOME", ".config", env) / "nami"


def user_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """nami's cache (tool files found valid): ``$XDG_CACHE_HOME/nami``, else ``~/.cache/nami``."""
    return xdg_folder("XDG_CACHE_HOME", ".cache", env) / "nami"
