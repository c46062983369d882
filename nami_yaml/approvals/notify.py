"""``approvals.notify``: each new pending approval POSTed as JSON to a webhook (a Slack or Teams relay, an
on-call tool), signed so the receiver knows it came from nami: ``X-Nami-Timestamp`` (Unix seconds) and
``X-Nami-Signature: sha256=HEX``, the HMAC-SHA256 of ``timestamp + "." + body`` keyed with the secret in
``$secret_env``. Sent on a thread of its own, retried with back-off: a notification never holds up the run;
one that fails is said (on stderr) and recorded (the audit log's ``notify failed`` line)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

FIELDS = ("id", "created", "agent", "tool", "risk", "target", "argv", "arguments", "rule", "reason", "cwd", "plan",
          "answer", "text", "required")
TRIES = 4
FIRST_PAUSE = 1.0  # seconds before the first retry; doubled each time
TIMEOUT = 10.0
MAX_PLAN_CHARS = 4000  # a plan's shown output, cut for a chat message

Notifier = Callable[[Mapping[str, Any]], "threading.Thread | None"]
Failed = Callable[[Mapping[str, Any], str], None]
"""Told of a notification that failed: the pending approval and why (e.g. the audit log's ``not_notified``)."""


def payload(record: Mapping[str, Any]) -> dict[str, Any]:
    """What is sent: the pending approval as the queue keeps it (redacted), without the run's details."""
    body = {key: record.get(key) for key in FIELDS if key in record}
    if "argv" in body:
        body.pop("arguments", None)
    if isinstance(body.get("plan"), str) and len(body["plan"]) > MAX_PLAN_CHARS:
        body["plan"] = body["plan"][:MAX_PLAN_CHARS] + "\n… (cut)"
    return body


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def webhook(notify: Mapping[str, Any], env: Mapping[str, str], say: Callable[[str], None],
            pause: float = FIRST_PAUSE, failed: Failed | None = None) -> Notifier | None:
    """The notifier ``notify`` describes (None when it names no webhook). A notification that fails is said
    with ``say`` and handed to ``failed``."""
    url = notify.get("webhook")
    if not url:
        return None
    secret_env = notify.get("secret_env")
    secret = env.get(str(secret_env)) if secret_env else None

    def deliver(record: Mapping[str, Any]) -> None:
        if secret_env and not secret:
            problem = f"${secret_env} (approvals.notify.secret_env) is not set"
            say(f"nami: approval {record.get('id')}: not notified: {problem}")
            if failed is not None:
                failed(record, f"not sent: {problem}")
            return
        body = json.dumps(payload(record), ensure_ascii=False, default=str).encode()
        problem = ""
        wait = pause
        for attempt in range(TRIES):
            timestamp = str(int(time.time()))
            headers = {"Content-Type": "application/json", "User-Agent": "nami-approvals",
                       "X-Nami-Timestamp": timestamp}
            if secret:
                headers["X-Nami-Signature"] = signature(secret, timestamp, body)
            request = urllib.request.Request(str(url), data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 (the configured URL)
                    if 200 <= response.status < 300:
                        return
                    problem = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                problem = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code != 429:
                    break  # the receiver refuses it: another try would be refused too
            except (OSError, ValueError) as exc:
                problem = str(getattr(exc, "reason", None) or exc)
            if attempt + 1 < TRIES:
                time.sleep(wait)
                wait *= 2
        say(f"nami: approval {record.get('id')}: the webhook of approvals.notify failed ({problem}); answer it "
            "with `nami approvals`")
        if failed is not None:
            failed(record, problem)

    def send(record: Mapping[str, Any]) -> threading.Thread:
        thread = threading.Thread(target=deliver, args=(dict(record),), name="nami-approval-notify", daemon=True)
        thread.start()
        return thread

    return send
