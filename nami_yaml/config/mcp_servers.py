"""agent.yaml's ``mcp_servers:``: each entry read into a :class:`McpServerSpec` and checked without starting
anything (``nami check``), and what the trust summary says about the servers a project starts.

Values of ``env:`` and ``headers:`` take host variables as ``${NAME}``, expanded only when the server starts,
so a token never has to be written in the file.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nami_yaml.config.loaded import loaded_files
from nami_yaml.env_secrets import is_secret_name
from nami_yaml.errors import WARNING, Problem
from nami_yaml.sandbox_settings import SandboxNeeds
from nami_yaml.spec.yamlpos import Document

if TYPE_CHECKING:  # config.files reads entries through this module, and settings imports config.files
    from nami_yaml.config.effective import Effective

SEPARATOR = "__"  # between the server's name and the tool's: github__search_issues
DEFAULT_STARTUP_TIMEOUT = 30.0
STDIO_KEYS = ("command", "args", "env", "cwd", "sandbox")
HTTP_KEYS = ("url", "headers")
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_HEADERS = ("AUTHORIZATION", "COOKIE")


class McpConfigError(Exception):
    """A server's entry cannot be used on this machine now (a variable it needs is unset or refused)."""


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # as written: values may hold ${NAME}
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # as written
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float | None = None  # None: limits.tool_timeout
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    where: str = ""  # "agent.yaml:12:3", the entry's position
    in_project: bool = False  # declared by the project's agent.yaml (not the user config)
    sandbox: SandboxNeeds = field(default_factory=SandboxNeeds)  # its own ``sandbox:`` (stdio servers)

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def endpoint(self) -> str:
        """How it is reached, for people: the command line, or the URL."""
        return self.url or shlex.join([self.command or "", *self.args])

    def variables(self) -> list[str]:
        """The host variables its env and headers take (``${NAME}``), in order."""
        names = [m.group(1) for value in (*self.env.values(), *self.headers.values())
                 for m in _REFERENCE.finditer(value)]
        return list(dict.fromkeys(names))

    def offers(self, tool: str) -> bool:
        """Whether ``enabled_tools`` / ``disabled_tools`` let the agent have this tool of the server."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools

    def working_folder(self, workspace: Path) -> Path:
        return (workspace / os.path.expanduser(self.cwd)).resolve() if self.cwd else workspace


def expand(value: str, env: Mapping[str, str], protected: frozenset[str]) -> str:
    """``value`` with ``${NAME}`` taken from ``env``; McpConfigError for an unset or protected variable."""

    def host_value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in protected:
            raise McpConfigError(f"${{{name}}} holds a model API key, which no tool or server is given")
        if name not in env:
            raise McpConfigError(f"${{{name}}} is not set")
        return env[name]

    return _REFERENCE.sub(host_value, value)


def server_specs(effective: Effective) -> list[McpServerSpec]:
    """The servers to start (``enabled: false`` ones left out), in the order they were written."""
    specs = []
    for name, entry in (effective.get("mcp_servers") or {}).items():
        if entry.get("enabled", True) is False:
            continue
        where, in_project = _position(effective, name)
        specs.append(McpServerSpec(
            name=name, command=entry.get("command"), args=tuple(entry.get("args") or ()),
            env=dict(entry.get("env") or {}), cwd=entry.get("cwd"), url=entry.get("url"),
            headers=dict(entry.get("headers") or {}),
            startup_timeout=float(entry.get("startup_timeout", DEFAULT_STARTUP_TIMEOUT)),
            tool_timeout=float(entry["tool_timeout"]) if "tool_timeout" in entry else None,
            enabled_tools=tuple(entry["enabled_tools"]) if "enabled_tools" in entry else None,
            disabled_tools=tuple(entry.get("disabled_tools") or ()), where=where, in_project=in_project,
            sandbox=SandboxNeeds.from_mapping(entry.get("sandbox"), origin=where)))
    return specs


def _position(effective: Effective, name: str) -> tuple[str, bool]:
    for config in reversed(effective.files):  # the project's file wins over the user config's
        if name in (config.data.get("mcp_servers") or {}):
            line, col = config.doc.position(("mcp_servers", name), key=True)
            return f"{config.doc.file}:{line}:{col}", config.path == effective.config_path
    return "", False


# -- checks ------------------------------------------------------------------------------------------------

def entry_problems(doc: Document, data: Mapping[str, Any]) -> list[Problem]:
    """What makes an entry unusable, found while reading the file (after its schema passed)."""
    problems: list[Problem] = []
    for name, entry in (data.get("mcp_servers") or {}).items():
        where = ("mcp_servers", name)
        if SEPARATOR in name:
            problems.append(doc.problem(where, f"the server name {name!r} must not contain '{SEPARATOR}': it "
                                               "separates the server from the tool in tool names", key=True))
        given = [key for key in ("command", "url") if key in entry]
        if len(given) != 1 and not (not given and entry.get("enabled") is False):
            message = "give either command (a stdio server) or url (an HTTP server), not both" if given else \
                "give command (a stdio server) or url (an HTTP server)"
            problems.append(doc.problem(where, message, key=True))
        elif given == ["command"]:
            problems.extend(doc.problem((*where, key), f"{key} is for HTTP servers (with url), not with command",
                                        key=True) for key in HTTP_KEYS if key in entry)
        elif given == ["url"]:
            problems.extend(doc.problem((*where, key), f"{key} is for stdio servers (with command), not with url",
                                        key=True) for key in STDIO_KEYS if key in entry)
        for group in ("env", "headers"):
            for key, value in (entry.get(group) or {}).items():
                if "${" in value.replace("$${", "") and not _REFERENCE.search(value):
                    problems.append(doc.problem((*where, group, key), f"write a host variable as ${{NAME}}, "
                                                                      f"e.g. ${{TOKEN}}; found {value!r}"))
    return problems


def check_problems(effective: Effective) -> list[Problem]:
    """For ``nami check``: variables that are refused (errors), unset here, or secrets written in the file
    (warnings); tools both enabled and disabled (warning). Nothing is started."""
    from nami_yaml.config.effective import protected_env_names

    problems: list[Problem] = []
    protected = protected_env_names(effective)
    for config in effective.files:
        doc = config.doc
        for name, entry in (config.data.get("mcp_servers") or {}).items():
            where = ("mcp_servers", name)
            for group in ("env", "headers"):
                for key, value in (entry.get(group) or {}).items():
                    problems.extend(_value_problems(doc, (*where, group, key), key, value, group, protected))
            clash = sorted(set(entry.get("enabled_tools") or ()) & set(entry.get("disabled_tools") or ()))
            if clash:
                problems.append(doc.problem((*where, "disabled_tools"), f"{', '.join(clash)} also in enabled_tools: "
                                            "disabled wins", severity=WARNING))
    return problems


def _value_problems(doc: Document, path: tuple[str, ...], key: str, value: str, group: str,
                    protected: frozenset[str]) -> list[Problem]:
    names = _REFERENCE.findall(value)
    found = [doc.problem(path, f"${{{name}}} holds a model API key, which no tool or server is given")
             for name in names if name in protected]
    found += [doc.problem(path, f"${{{name}}} is not set here: the server will not start", severity=WARNING)
              for name in names if name not in protected and name not in os.environ]
    secret = is_secret_name(key) or (group == "headers" and key.upper() in _SECRET_HEADERS)
    if secret and not names and value.strip():
        found.append(doc.problem(path, f"{key} looks like a secret written into the file; take it from the host "
                                       f"with ${{NAME}} instead", severity=WARNING))
    return found


# -- trust --------------------------------------------------------------------------------------------------

def trust_lines(effective: Effective) -> list[str]:
    """What the trust summary says about the servers the project's agent.yaml starts."""
    specs = [spec for spec in server_specs(effective) if spec.in_project]
    if not specs:
        return []
    code = {server.name: server for server in loaded_files(effective, project_only=True).servers}
    project = effective.config_path.parent.resolve() if effective.config_path else None
    lines = [f"  starts {len(specs)} MCP server{'s' if len(specs) != 1 else ''} (their tools join the agent's):"]
    for spec in specs:
        kind = "HTTP" if spec.url else "stdio"
        lines.append(f"    {spec.name} ({kind}) from {spec.where}: {spec.endpoint()}")
        if spec.cwd:
            lines.append(f"      in {spec.cwd}")
        if spec.variables():
            lines.append(f"      receives the host's {', '.join(spec.variables())}")
        folders = code[spec.name].folders if spec.name in code else ()
        if folders and project is not None:
            shown = [f"{folder.relative_to(project).as_posix()}/" if folder != project else "./" for folder in folders]
            lines.append(f"      its code (trust covers it): {', '.join(shown)}")
            if project in folders:
                lines.append("      (that is the whole project: any change to it asks for trust again; a folder of "
                             "the server's own keeps it apart)")
    return lines
