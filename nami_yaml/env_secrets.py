"""What a child process of nami's may see of the host's environment: which variables look secret (by name
or value, plus the ``env_scrub:`` patterns of the config files), the variables set so no tool waits for a
person, and the complete environment built from both.

A leaf: the process runner, the MCP client, the config checks and the audit log all decide alike.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

NON_INTERACTIVE_ENV: dict[str, str] = {
    # Pagers would wait for a keypress that never comes.
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "",
    "AWS_PAGER": "",
    # Editors: "true" exits at once, so `git commit` without -m aborts instead of hanging.
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
    "KUBE_EDITOR": "true",
    # Prompts: fail instead of asking.
    "GIT_TERMINAL_PROMPT": "0",
    "GCM_INTERACTIVE": "never",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "TF_INPUT": "0",
    "TF_IN_AUTOMATION": "1",
    "GH_PROMPT_DISABLED": "1",
    # Plain text for the model: no colour codes, no cursor tricks.
    "TERM": "dumb",
    "NO_COLOR": "1",
    "CLICOLOR": "0",
    # Python children flush as they go, so output written before a timeout kill is not lost.
    "PYTHONUNBUFFERED": "1",
}

# A name holding one of these anywhere is secret-looking (MY_API_KEY, GITHUB_TOKEN, PGPASSWORD).
SECRET_MARKERS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL")
# ... and one of these as a whole word between underscores (MYSQL_PWD, SMTP_PASS, SENTRY_DSN, NPM_AUTH,
# GITLAB_PAT): as substrings they would also catch PWD, BYPASS_CACHE or GIT_AUTHOR_NAME.
SECRET_WORDS = frozenset({"PWD", "PASS", "PASSWD", "PASSPHRASE", "AUTH", "OAUTH", "DSN", "PAT", "COOKIE",
                          "PRIVATE", "CREDS"})
# Names that match a rule above but hold no secret, and that tools need as they are.
NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
# A URL with a password in it (postgres://user:pass@host, redis://:pass@host), or a PEM private key.
_SECRET_VALUE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@|-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")

# An OpenTelemetry collector's credentials (headers such as "Authorization=Bearer …", a client key): nami's
# exporter reads them, and no tool ever gets them (RuntimeContext.protected_env), passthrough or not.
TELEMETRY_CREDENTIALS = frozenset(
    f"OTEL_EXPORTER_OTLP{signal}_{what}" for signal in ("", "_TRACES", "_METRICS", "_LOGS")
    for what in ("HEADERS", "CLIENT_KEY", "CLIENT_CERTIFICATE"))


@dataclass(frozen=True)
class EnvScrub:
    """More host variables to keep from tools than nami's own rules catch: shell-style patterns (``*``,
    ``?``, case-insensitive) for names, and for whole values. From ``env_scrub:`` in the config files."""

    names: tuple[str, ...] = ()
    values: tuple[str, ...] = ()


def is_secret_name(name: str, scrub: EnvScrub | None = None) -> bool:
    upper = name.upper()
    if upper in NOT_SECRET:
        return False
    if any(marker in upper for marker in SECRET_MARKERS):
        return True
    if SECRET_WORDS.intersection(re.split(r"[^A-Z0-9]+", upper)):
        return True
    return scrub is not None and any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in scrub.names)


def is_secret_value(value: str, scrub: EnvScrub | None = None) -> bool:
    if _SECRET_VALUE.search(value):
        return True
    return scrub is not None and any(fnmatch.fnmatchcase(value, pattern) for pattern in scrub.values)


def is_secret(name: str, value: str, scrub: EnvScrub | None = None) -> bool:
    """Whether a host variable must be kept from tools (unless a tool lists it in ``env_passthrough``)."""
    return is_secret_name(name, scrub) or is_secret_value(value, scrub)


# What every program needs of the host's environment, for a tool that takes no more (``host_env: false``):
# where programs are, and how to read and write text.
MINIMAL_HOST_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def minimal_host_env(host_env: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """Of ``host_env``, only MINIMAL_HOST_VARIABLES and the names a tool lists in ``passthrough``."""
    wanted = {*MINIMAL_HOST_VARIABLES, *passthrough}
    return {name: value for name, value in host_env.items() if name in wanted}


def child_environment(
    host_env: Mapping[str, str],
    *,
    passthrough: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    protected: Iterable[str] = (),
    scrub: EnvScrub | None = None,
) -> dict[str, str]:
    """The complete environment for a tool's child process.

    Host variables minus secret-looking ones (by name, by value, and by the configured ``scrub``
    patterns); plus ``passthrough`` names even if secret-looking; never a ``protected`` name; then
    NON_INTERACTIVE_ENV; then ``extra`` (the tool's fixed env), which wins over everything except that it
    cannot set a protected name: a value like ``${OPENAI_API_KEY}`` expanded into ``extra`` would
    otherwise hand the model's key to the tool.
    """
    blocked = frozenset(protected)
    env = dict(_kept(tuple(host_env.items()), blocked, scrub))
    for name in passthrough:
        if name in host_env and name not in blocked:
            env[name] = host_env[name]
    env.update(NON_INTERACTIVE_ENV)
    for name, value in (extra or {}).items():
        if name not in blocked:
            env[name] = value
    _add_git_config(env, GIT_CONFIG)
    return env


@functools.lru_cache(maxsize=16)
def _kept(host_env: tuple[tuple[str, str], ...], blocked: frozenset[str],
          scrub: EnvScrub | None) -> tuple[tuple[str, str], ...]:
    """The host variables a tool may see. Cached: every call of a run starts from the same environment
    and rules, and judging each variable by name and value cost more than all the rest of preparing a call."""
    return tuple((k, v) for k, v in host_env if k not in blocked and not is_secret(k, v, scrub))


def traced_env(env: dict[str, str], trace: dict[str, str] | None) -> dict[str, str]:
    """``env`` with the call's trace context as the environment carries it (TRACEPARENT, TRACESTATE: the
    OpenTelemetry convention), so what the process does joins the run's trace. Read when the process starts:
    the tracer fills the carrier once the call is decided, after it was prepared."""
    if not trace:
        return env
    return {**env, **{name.upper(): value for name, value in trace.items()}}


# Git takes a folder for a repository by its files (HEAD, objects/, refs/), not only by a `.git` in it, and
# obeys its `config`: a downloaded folder, or a sub-folder of a cloned one, laid out so made `git status`
# run its core.fsmonitor. Given last and as command-line configuration (which a repository cannot
# override), this opens a bare repository only where --git-dir or GIT_DIR names it, whatever runs git.
GIT_CONFIG = (("safe.bareRepository", "explicit"),)


def _add_git_config(env: dict[str, str], settings: tuple[tuple[str, str], ...]) -> None:
    """Append ``settings`` to the GIT_CONFIG_COUNT/KEY/VALUE entries ``env`` already has (a count git
    would refuse is dropped, with its entries)."""
    count = env.get("GIT_CONFIG_COUNT", "0")
    index = int(count) if count.isascii() and count.isdigit() else 0
    for key, value in settings:
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
        index += 1
    env["GIT_CONFIG_COUNT"] = str(index)
