"""Checks that talk to the model's endpoint: reachable, listing the configured model, and (``--live``) one
tiny completion that must come back as a tool call.

The listing is one GET of ``{base_url}/models`` with the standard library, sending the key exactly where
the model client would send it; openai is imported only for ``--live``.
"""

from __future__ import annotations

import difflib
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from nami_yaml.config.effective import Effective
from nami_yaml.config.settings import LOCAL_HOSTS
from nami_yaml.display import plural
from nami_yaml.doctor.result import FAIL, OK, WARN, Check
from nami_yaml.errors import NamiError

PING_TOOL = "nami_doctor_ping"


@dataclass(frozen=True)
class Listing:
    status: int | None  # the HTTP status, None when nothing answered
    models: list[str] | None  # the ids listed, None when the answer was not a model list
    error: str | None  # what went wrong, for a human
    seconds: float


def list_models(base_url: str, api_key: str | None, timeout: float) -> Listing:
    request = urllib.request.Request(base_url.rstrip("/") + "/models", headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http(s) by schema)
            status, body = response.status, response.read(4_000_000)
    except urllib.error.HTTPError as exc:
        return Listing(exc.code, None, f"HTTP {exc.code} {exc.reason}", time.monotonic() - started)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Listing(None, None, str(reason), time.monotonic() - started)
    elapsed = time.monotonic() - started
    try:
        data = json.loads(body)
        models = [str(item["id"]) for item in data["data"]]
    except (ValueError, KeyError, TypeError):
        return Listing(status, None, "the answer is not a model list", elapsed)
    return Listing(status, models, None, elapsed)


def endpoint_checks(effective: Effective, *, timeout: float = 10.0) -> list[Check]:
    """``endpoint`` (it answers) and ``model`` (it is listed)."""
    base_url = effective.model.base_url
    name = effective.model.name
    if not base_url:
        return [Check("endpoint", FAIL, "model.base_url is not set (agent.yaml, or $NAMI_BASE_URL)")]
    listing = list_models(base_url, effective.api_key, timeout)
    url = f"{base_url.rstrip('/')}/models"
    if listing.status is None:
        hint = " (is the local server running?)" if _local(base_url) else ""
        return [Check("endpoint", FAIL, f"cannot reach {url}: {listing.error}{hint}"),
                Check("model", WARN, f"{name}: not checked, the endpoint did not answer")]
    if listing.status in (401, 403):
        return [Check("endpoint", FAIL, f"{url} refused the API key ({listing.error}); check "
                                        f"{effective.api_key_source}"),
                Check("model", WARN, f"{name}: not checked, the key was refused")]
    if listing.models is None:
        # Some OpenAI-compatible servers answer completions but list no models: worth a warning, not a failure.
        status = FAIL if listing.status >= 500 else WARN
        return [Check("endpoint", status, f"{base_url} answers, but {url} gave {listing.error}"),
                Check("model", WARN, f"{name}: not checked, the server lists no models")]
    checks = [Check("endpoint", OK, f"{base_url} answers ({plural(len(listing.models), 'model')}, "
                                    f"{listing.seconds:.2f} s)")]
    if name in listing.models:
        checks.append(Check("model", OK, f"{name} is listed by the server"))
    else:
        close = difflib.get_close_matches(str(name), listing.models, n=1, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        shown = ", ".join(listing.models[:10]) + (", …" if len(listing.models) > 10 else "")
        if _local(base_url):  # the fake server, llama.cpp, a proxy: many answer whatever name is asked for
            checks.append(Check("model", WARN, f"{name} is not among the models this local server lists "
                                               f"({shown or 'none'}); many answer any name, else set $NAMI_MODEL "
                                               "or model.name to one of them"))
        else:
            checks.append(Check("model", FAIL, f"{name} is not among the models the server lists{hint}",
                                [f"listed: {shown or '(none)'}"]))
    return checks


def _local(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "").lower() in LOCAL_HOSTS


def live_check(effective: Effective) -> Check:
    """One small request with one tool the model is asked to call; the answer must be that tool call."""
    from nami_yaml.app.assembly import build_model  # imports openai on the request, only for --live

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are being health-checked. Answer only with the requested tool call."},
        {"role": "user", "content": f'Call the tool {PING_TOOL} once, with text "ok".'},
    ]
    tools = [{"type": "function", "function": {
        "name": PING_TOOL, "description": "Answer a health check.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                       "additionalProperties": False}}}]
    started = time.monotonic()
    try:
        turn = build_model(effective).complete(messages, tools)
    except NamiError as exc:  # ModelError and ConfigError: already one line for a human
        return Check("live", FAIL, str(exc))
    seconds = time.monotonic() - started
    names = [call.name for call in turn.tool_calls]
    if PING_TOOL in names:
        usage = f", {plural(turn.usage.prompt_tokens + turn.usage.completion_tokens, 'token')}" if turn.usage else ""
        return Check("live", OK, f"{effective.model.name} answered with a tool call ({seconds:.1f} s{usage})")
    said = (turn.content or "").strip().replace("\n", " ")[:80]
    return Check("live", WARN, f"{effective.model.name} answered without calling the tool: it may not "
                               f"support tool calling (see model.quirks in docs/config.md)",
                 [f"it said: {said}"] if said else [])
