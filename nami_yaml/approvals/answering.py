"""The answering side of the queue (``nami approvals approve|deny``): an answer file the run reads, written
by the person answering, who learns from the run's receipt whether it counted. Nothing here prints."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nami_yaml.approvals.sealed_token import seal
from nami_yaml.approvals.signing import KEY_ENV, sign
from nami_yaml.approvals.store import (
    PENDING,
    ApprovalRefused,
    QueueFolder,
    Stored,
    iso_time,
    run_alive,
    user_name,
)

RECEIPT_WAIT = 30.0  # seconds an answer waits for the run to take it
POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Given:
    """What became of an answer: the run's receipt message."""

    approval_id: str
    message: str


def find(folder: QueueFolder, approval_id: str) -> Stored:
    """A pending approval by id; ApprovalRefused (exit 2) for an unknown one."""
    stored = folder.pending(approval_id)
    if stored is None:
        raise ApprovalRefused(f"no pending approval has the id {approval_id!r} in {folder.path} "
                              "(`nami approvals` lists them)")
    return stored


def state_of(stored: Stored) -> str:
    """``pending``, or what ended it (approved, denied, withdrawn, timed out, refused): a pending approval
    whose run is gone was withdrawn with it."""
    state = str(stored.data.get("state") or PENDING)
    if state == PENDING and not run_alive(stored.data.get("run") or {}):
        return "withdrawn"
    return state


def give(folder: QueueFolder, approval_id: str, *, approve: bool, reason: str | None = None,
         env: Mapping[str, str] | None = None, wait: float = RECEIPT_WAIT) -> Given:
    """Answer ``approval_id`` as this process's user (and as the named approver whose SSH key
    ``$NAMI_APPROVER_KEY`` names, signing.py, or whose token ``$NAMI_APPROVER_TOKEN`` holds). ApprovalRefused
    for an answer that cannot be given or that the run refused."""
    env = os.environ if env is None else env
    stored = find(folder, approval_id)
    state = state_of(stored)
    if state == "withdrawn":
        raise ApprovalRefused(f"approval {approval_id} was withdrawn: the run that asked has ended")
    if state != PENDING:
        raise ApprovalRefused(f"approval {approval_id} is answered already ({state})")
    uid = os.getuid()
    token = env.get("NAMI_APPROVER_TOKEN") or None
    key = env.get(KEY_ENV) or None  # a private key's path: the answer is signed, nothing secret written
    if token is None and key is None and any(a.get("how") == "OS user" and a.get("who") == user_name(uid)
                             for a in stored.data.get("approvals") or []):
        raise ApprovalRefused(f"{user_name(uid)} has approved {approval_id} already; a second answer by the same "
                              "person does not count")
    binding = stored.data.get("binding") or {}
    nonce = secrets.token_hex(8)
    data: dict[str, Any] = {"id": approval_id, "digest": binding.get("digest"),
                            "answer": "approve" if approve else "deny", "reason": reason, "uid": uid,
                            "user": user_name(uid), "label": env.get("NAMI_APPROVER") or None,
                            "created": iso_time(time.time())}
    if key is not None:
        data["signature"] = sign(key, data)
    elif token is not None:
        # Sealed for the run that asked, over what the answer says: the file's readers (the folder's group)
        # get nothing they could present again (sealed_token.py).
        data["sealed_token"] = seal(token, stored.data.get("answer_key"), data)
        if data["sealed_token"] is None:
            raise ApprovalRefused(f"approval {approval_id} was asked by an older nami, which takes a token only in "
                                  "the clear, where anyone who can read the queue folder could take it: answer "
                                  "with your key ($NAMI_APPROVER_KEY), or once nami is updated where it runs")
    name = f"{approval_id}.answer.{nonce}.json"
    # Readable by the run only: the run's own user (0600), or, in a team folder, the run's user through the
    # folder's group (0640). Nothing in it is secret: a token is sealed for the run alone, a signature
    # proves only this answer (signing.py). It is deleted once the run took it.
    run_uid = (stored.data.get("run") or {}).get("uid")
    folder.create(name, data, 0o600 if run_uid == uid else 0o640)
    try:
        return Given(approval_id, _receipt(folder, approval_id, nonce, run_uid, wait))
    finally:
        folder.remove(name)


def _receipt(folder: QueueFolder, approval_id: str, nonce: str, run_uid: Any, wait: float) -> str:
    name = f"{approval_id}.receipt.{nonce}.json"
    deadline = time.monotonic() + wait
    while True:
        stored = folder.read(name)
        if stored is not None and stored.owner == run_uid:
            folder.remove(name)
            if stored.data.get("accepted") is True:
                return str(stored.data.get("message") or "taken")
            raise ApprovalRefused(f"approval {approval_id}: the run refused the answer: {stored.data.get('message')}")
        current = folder.pending(approval_id)
        if current is None or state_of(current) != PENDING:
            state = state_of(current) if current is not None else "gone"
            raise ApprovalRefused(f"approval {approval_id} ended before the answer was taken ({state})")
        if time.monotonic() >= deadline:
            raise ApprovalRefused(f"approval {approval_id}: the run did not take the answer within {int(wait)}s "
                                  "(is it still waiting?)")
        time.sleep(POLL_SECONDS)
