"""What every command needs: the effective config, the registry, the runtime context, error mapping."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from nami_yaml.config.protected import protected_paths
from nami_yaml.config.settings import Effective, env_scrub_rules, load_settings, protected_env_names
from nami_yaml.config.toolset import build_registry
from nami_yaml.config.trust import code_check, needs_trust, remember, summary, trust_state
from nami_yaml.errors import ConfigError, NamiError, SpecError
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext, ToolSettings, session_spill_dir

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MAX_STEPS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

config_option = click.option("--config", "-c", metavar="FILE",
                             help="agent.yaml to use (else $NAMI_CONFIG, else the nearest one upwards).")
tools_option = click.option("--tools", "-t", "extra_tools", multiple=True, metavar="PATH",
                            help="Also load tool files from PATH (file, folder or glob); repeatable.")

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(code)


def handle_errors(function: F) -> F:
    """Known errors become a message and an exit code; never a traceback."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except SpecError as exc:
            count = len(exc.problems)
            fail(f"{exc}\n{count} problem{'s' if count != 1 else ''} found", EXIT_USAGE)
        except ConfigError as exc:
            fail(f"nami: {exc}", EXIT_USAGE)
        except NamiError as exc:
            fail(f"nami: {exc}", EXIT_ERROR)
        except KeyboardInterrupt:
            fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            sys.stderr.close()  # `nami ... | head` closed our stdout: not an error worth a message
            sys.exit(EXIT_OK)

    return wrapper  # type: ignore[return-value]


def settings(config: str | None, flags: dict[str, Any] | None = None) -> Effective:
    return load_settings(config=config, env=os.environ, cwd=Path.cwd(), flags=flags)


def tool_settings(effective: Effective) -> ToolSettings:
    get = effective.get
    return ToolSettings(
        default_timeout=float(get("limits.tool_timeout")),
        max_output=int(get("limits.max_output")),
        max_saved_output=int(get("limits.max_saved_output")),
        bash_timeout=float(get("tools.bash.timeout")),
        bash_max_timeout=float(get("tools.bash.max_timeout")),
        fetch_allow_hosts=tuple(get("tools.fetch_url.allow_hosts") or ()),
        fetch_max_bytes=int(get("tools.fetch_url.max_bytes")),
        fetch_timeout=float(get("tools.fetch_url.timeout")),
    )


def runtime_context(effective: Effective, extra_tools: list[str] | None = None) -> RuntimeContext:
    workspace = Path(effective.get("workspace") or Path.cwd())
    if not workspace.is_dir():
        raise ConfigError(f"the workspace {workspace} is not a folder")
    return RuntimeContext(
        workspace=workspace, settings=tool_settings(effective), host_env=dict(os.environ),
        protected_env=protected_env_names(effective), env_scrub=env_scrub_rules(effective),
        spill_dir=session_spill_dir(), code_check=code_check(effective) if needs_trust(effective) else None,
        protected_paths=protected_paths(effective, extra_tools),
    )


def session(config: str | None, flags: dict[str, Any] | None = None, extra_tools: list[str] | None = None,
            *, will_run: bool = False) -> tuple[Effective, Registry, RuntimeContext]:
    """Load everything. ``will_run``: tools are about to run, so a found project agent.yaml must be trusted."""
    effective = settings(config, flags)
    registry = build_registry(effective, extra_tools)
    if will_run and needs_trust(effective):
        ensure_trusted(effective, registry)
    return effective, registry, runtime_context(effective, extra_tools)


def ensure_trusted(effective: Effective, registry: Registry) -> None:
    state = trust_state(effective, registry)
    if state.trusted:
        return
    what = "changed since you trusted it" if state.changed else "is not trusted yet"
    if sys.stdin.isatty() and sys.stderr.isatty():
        click.echo(f"This project's agent.yaml {what}. Its tools run commands on your machine.", err=True)
        for line in summary(effective, registry):
            click.echo(line, err=True)
        if click.confirm("Trust it and go on?", default=False, err=True):
            remember(state)
            return
    raise ConfigError(
        f"{state.config} {what} (with its tools and prompt). Review it (`nami tools list`, `nami config`), "
        "then run `nami trust` in this folder, or name it with --config / $NAMI_CONFIG."
    )
