"""Tests that run a real program (kubectl, terraform, curl…) skip, with the reason, where it is absent.

CI sets NAMI_REQUIRE_PROGRAMS (a comma-separated list, in .ci/run) to the programs its machines have: there
a missing one fails the run instead of being skipped, so those tests can never be skipped silently.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest

REQUIRED_VARIABLE = "NAMI_REQUIRE_PROGRAMS"


def required() -> set[str]:
    return {p.strip() for p in os.environ.get(REQUIRED_VARIABLE, "").split(",") if p.strip()}


def need(program: str) -> None:
    """Inside a test: skip (or fail, where CI requires it) when ``program`` is not on PATH."""
    if shutil.which(program) is not None:
        return
    reason = f"{program} is not installed here"
    if program in required():
        pytest.fail(f"{reason}: {REQUIRED_VARIABLE} requires it")
    pytest.skip(reason)


def needs(program: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """As a decorator: the test calls :func:`need` before it starts."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(test)
        def checked(*args: Any, **kwargs: Any) -> Any:
            need(program)
            return test(*args, **kwargs)

        return checked

    return decorate


IMPORT_VARIABLE = "NAMI_REQUIRE_IMPORT"


def need_import_extra() -> None:
    """Inside a test of `nami import holmes|shellmcp` (Jinja templates): skip, with the reason, where the import
    extra (jinja2) is not installed; fail where CI sets NAMI_REQUIRE_IMPORT=1."""
    try:
        import jinja2  # noqa: F401
    except ImportError as exc:
        reason = f"the import extra is not installed ({exc}; pip install -e '.[import]')"
        if os.environ.get(IMPORT_VARIABLE) == "1":
            pytest.fail(f"{reason}: {IMPORT_VARIABLE}=1 requires it", pytrace=False)
        pytest.skip(reason)


MCP_VARIABLE = "NAMI_REQUIRE_MCP"
OTEL_VARIABLE = "NAMI_REQUIRE_OTEL"


def need_extra(extra: str, modules: tuple[str, ...], variable: str) -> None:
    """At the top of a test module of an optional extra (before it imports the extra's packages): skip the
    module, with the reason, where ``modules`` cannot be imported; fail where CI sets ``variable``=1."""
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError as exc:
        reason = f"the {extra} extra is not installed ({exc}; pip install -e '.[{extra}]')"
        if os.environ.get(variable) == "1":
            pytest.fail(f"{reason}: {variable}=1 requires it", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


def need_mcp() -> None:
    """The MCP SDK (the mcp extra); CI sets NAMI_REQUIRE_MCP=1."""
    need_extra("mcp", ("mcp", "mcp_types"), MCP_VARIABLE)


def need_otel() -> None:
    """OpenTelemetry's SDK, OTLP/HTTP exporter and protobuf definitions (the otel extra, which the tests'
    receiver decodes with); CI sets NAMI_REQUIRE_OTEL=1."""
    need_extra("otel", ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http", "opentelemetry.proto"),
               OTEL_VARIABLE)


BWRAP_VARIABLE = "NAMI_REQUIRE_BWRAP"


def need_bwrap() -> None:
    """Inside a test of the real sandbox: skip, with the reason, where bubblewrap cannot work here (not
    installed, no user namespaces); fail instead where CI sets NAMI_REQUIRE_BWRAP=1."""
    from nami_yaml.runners.sandbox.probe import availability

    found = availability(os.environ)
    if found.available:
        return
    reason = f"the sandbox is not available here: {found.describe()}"
    if os.environ.get(BWRAP_VARIABLE) == "1":
        pytest.fail(f"{reason}: {BWRAP_VARIABLE}=1 requires it", pytrace=False)
    pytest.skip(reason)


BROWSER_VARIABLE = "NAMI_REQUIRE_BROWSER"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def need_browser() -> None:
    """Inside a test in a real headless browser (the approvals page): skip, with the reason, where Debian's
    chromium, chromium-driver or the selenium package (the test extra) is absent; fail instead where CI sets
    NAMI_REQUIRE_BROWSER=1 (.ci/run installs them)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    try:
        importlib.import_module("selenium.webdriver")
    except ImportError:
        missing.append("the selenium package (pip install -e '.[test]')")
    if not missing:
        return
    reason = f"no headless browser here: {', '.join(missing)} missing (apt-get install chromium chromium-driver)"
    if os.environ.get(BROWSER_VARIABLE) == "1":
        pytest.fail(f"{reason}: {BROWSER_VARIABLE}=1 requires it", pytrace=False)
    pytest.skip(reason)
