"""Can these settings talk to a model? A name, an endpoint and, where the endpoint needs one, an API key:
checked before a project is trusted, so a missing key is the first thing a newcomer hears about (a
configuration error), not the last thing after reviewing and trusting the project.

Before trust, the check must not take an untrusted agent.yaml's word for where the key goes: telling the
user which variable to export for an endpoint they have not reviewed would ask for their key on the
file's behalf. So a missing key is reported before trust only when the endpoint and key variable are
what they would be without that file (the defaults, the user config, NAMI_* variables, flags); where the
file itself chooses them, trust comes first (its summary says where the key would go) and the same
check follows. A local endpoint needs no key either way.
"""

from __future__ import annotations

from collections.abc import Callable

from nami_yaml.config.effective import Effective
from nami_yaml.errors import ConfigError


def model_problem(effective: Effective) -> str | None:
    """Why no model client can be built from ``effective`` (None: one can). Sends nothing anywhere."""
    model = effective.model
    if not model.name or not model.base_url:
        missing = "model.name" if not model.name else "model.base_url"
        return (f"{missing} is not set: give it in agent.yaml, or use --model / --base-url "
                f"(or $NAMI_MODEL / $NAMI_BASE_URL)")
    variable = model.api_key_env
    if not effective.api_key and variable:
        return (f"no API key for {model.base_url}: export {variable}=... (or NAMI_API_KEY), or use "
                "a local model (`model: {provider: ollama}`, docs/config.md)")
    return None


def require_model(effective: Effective) -> None:
    """Raise ConfigError when no model client can be built from ``effective``."""
    problem = model_problem(effective)
    if problem is not None:
        raise ConfigError(problem)


def destination(effective: Effective) -> tuple[str | None, str | None]:
    """Where a key would go, and which variable it would be read from."""
    return effective.model.base_url, effective.model.api_key_env


def check_before_trust(effective: Effective, without_project: Callable[[], Effective]) -> None:
    """The model check of a project not trusted yet: ``without_project`` gives the settings as they would
    be without its agent.yaml. Raises ConfigError only where that file does not choose the destination."""
    problem = model_problem(effective)
    if problem is None:
        return
    if destination(effective) != destination(without_project()):
        return  # the untrusted file chooses where the key goes: it is reviewed first, checked after
    raise ConfigError(problem)
