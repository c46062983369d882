"""Answers signed with an approver's SSH key (``approvals.approvers: {alice: {ssh_public_key: …}}``): nothing
secret travels in the answer file, and nothing is needed but the approver's key (a token, instead, must be
sealed for the run that asked: sealed_token.py).

``nami approvals approve|deny`` with ``$NAMI_APPROVER_KEY`` (a private key's path) signs what the answer
says with ``ssh-keygen -Y sign -n nami-approval``; the run checks it with ``ssh-keygen -Y verify`` against
the keys listed. What is signed names the approval, the digest of the call, the answer, its reason and the
OS user who answers: a copy of the signature says nothing about another approval, another version of the
call, another answer, and counts for nobody in a file another user owns.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nami_yaml.approvals.store import ApprovalRefused

NAMESPACE = "nami-approval"
KEY_ENV = "NAMI_APPROVER_KEY"
TIMEOUT = 30.0


def signed_text(data: Mapping[str, Any]) -> bytes:
    """What the signature covers: the answer's id, digest, answer, reason and answering uid."""
    fields = {key: data.get(key) for key in ("id", "digest", "answer", "reason", "uid")}
    return ("nami-approval v1\n" + json.dumps(fields, sort_keys=True, ensure_ascii=True)).encode()


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise ApprovalRefused("ssh-keygen is not installed (OpenSSH's client)")
    return found


def _environment() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def sign(key: str, data: Mapping[str, Any]) -> str:
    """The SSH signature (armored text) of ``data`` by the private key at ``key``."""
    path = Path(key).expanduser()
    if not path.is_file():
        raise ApprovalRefused(f"${KEY_ENV} names {path}, which is not a file")
    try:
        done = subprocess.run([_ssh_keygen(), "-Y", "sign", "-q", "-n", NAMESPACE, "-f", str(path)],
                              input=signed_text(data), capture_output=True, timeout=TIMEOUT,
                              env=_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ApprovalRefused(f"ssh-keygen could not sign: {exc}") from None
    if done.returncode != 0 or b"BEGIN SSH SIGNATURE" not in done.stdout:
        said = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        raise ApprovalRefused(f"ssh-keygen could not sign with {path}: {said}")
    return done.stdout.decode()


def signer(data: Mapping[str, Any], keys: Mapping[str, str]) -> str | None:
    """The approver among ``keys`` (name -> public key) whose key made the answer's ``signature`` over what
    it says, or None (no signature, none of theirs, not valid, or ssh-keygen absent)."""
    signature = data.get("signature")
    if not isinstance(signature, str) or not keys or shutil.which("ssh-keygen") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="nami-approval-") as folder:
        signature_path = Path(folder) / "answer.sig"
        signature_path.write_text(signature, encoding="utf-8")
        for name, key in keys.items():
            allowed = Path(folder) / "allowed_signers"
            allowed.write_text(f'{name} namespaces="{NAMESPACE}" {key}\n', encoding="utf-8")
            try:
                done = subprocess.run([_ssh_keygen(), "-Y", "verify", "-f", str(allowed), "-I", name,
                                       "-n", NAMESPACE, "-s", str(signature_path)], input=signed_text(data),
                                      capture_output=True, timeout=TIMEOUT, env=_environment())
            except (OSError, subprocess.TimeoutExpired):
                return None
            if done.returncode == 0:
                return name
    return None
