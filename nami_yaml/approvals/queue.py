"""The run's side of the queue: a question kept as a pending approval, the wait for answers, and what an
answer must be to count (who gave it, that it approves this very call, that enough different people did
in time, that the rules still ask and not deny)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.agent.hooks import Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.approvals.binding import Binding, bind
from nami_yaml.approvals.clock import WAITS
from nami_yaml.approvals.listing import approver_named
from nami_yaml.approvals.notify import Notifier, webhook
from nami_yaml.approvals.plans import cut, shown_plan
from nami_yaml.approvals.sealed_token import RunKey
from nami_yaml.approvals.signing import signer
from nami_yaml.approvals.store import (
    APPROVED,
    DENIED,
    PENDING,
    REFUSED,
    TIMED_OUT,
    WITHDRAWN,
    QueueFolder,
    iso_time,
    new_id,
    process_start,
    user_name,
)
from nami_yaml.display import visible_line
from nami_yaml.policy.approval import ApprovalRequest, Approver
from nami_yaml.policy.audit import host_secrets, plan_entry, redact, scrub_text, secret_values

POLL_SECONDS = 0.2
SOURCE = "approvals queue"

Recheck = Callable[[PreparedCall], "Decision | None"]
"""The rules decided again when the answer comes: a deny (or a refusal) wins over the approval; None: the
call may still run."""


def answer_line(approval_id: str) -> dict[str, str]:
    return {"approve": f"nami approvals approve {approval_id}",
            "deny": f"nami approvals deny {approval_id} --reason TEXT"}


def pending_record(request: ApprovalRequest, approval_id: str, binding: Binding, *, required: int,
                   timeout: float, expires: float, session: str | None = None, workspace: str | None = None,
                   page_url: str | None = None, answer_key: RunKey | None = None) -> dict[str, Any]:
    """The pending approval as written to the queue (and, later, POSTed to a webhook): what the person sees,
    redacted as the audit log is, and the digest of what they approve."""
    call, pending = request.call, request.pending
    secrets = sorted({*secret_values(call.arguments), *host_secrets()}, key=len, reverse=True)
    plan = plan_entry(call, secrets)
    target = getattr(call, "target", None)
    now = time.time()
    shown = scrub_text(call.describe(), secrets)
    answer = answer_line(approval_id)
    if page_url:
        answer["page"] = page_url
    rule = pending.source
    planned = shown_plan(call)
    text = (f"{request.agent or 'nami'} asks to run {call.risk} tool {call.name}"
            + (f" on target {target}" if target is not None else "") + f": {visible_line(shown)}."
            + (f" Asked by {rule}" if rule else " It needs a yes")
            + (f": {scrub_text(pending.reason, secrets)}." if pending.reason else ".")
            + (f" Its plan ({visible_line(scrub_text(planned.command, secrets))}) is in `plan`." if planned else "")
            + (f" Needs {required} different approvers." if required > 1 else "")
            + f" Answer with `{answer['approve']}` or `{answer['deny']}`.")
    return {
        "version": 1,
        "id": approval_id,
        "created": iso_time(now),
        "created_unix": now,
        "agent": request.agent,
        "tool": call.name,
        "risk": call.risk,
        "kind": call.kind,
        "target": target,
        "describe": shown,
        **({"argv": plan["argv"]} if "argv" in plan else {}),
        "arguments": redact(call.arguments),
        "cwd": plan.get("cwd"),
        "rule": rule,
        "reason": scrub_text(pending.reason, secrets) if pending.reason else None,
        # a plan step's shown output, where the tool declares one (approvals/plans.py), and what it binds
        "plan": scrub_text(cut(planned.text, saved=planned.saved), secrets) if planned is not None else None,
        "plan_sha256": planned.sha256 if planned is not None else None,
        "details": plan,
        "answer": answer,
        "text": text,
        "binding": binding.to_json(),
        # what an approver's token is sealed for (sealed_token.py): it opens for this run alone
        **({"answer_key": answer_key.to_json()} if answer_key is not None else {}),
        "required": required,
        "expires_seconds": expires,
        "timeout_at": iso_time(now + timeout),
        "run": {"pid": os.getpid(), "start": process_start(os.getpid()), "uid": os.getuid(),
                "user": user_name(os.getuid()), "host": socket.gethostname(), "session": session,
                "workspace": workspace},
        "state": PENDING,
        "approvals": [],
        "outcome": None,
    }


@dataclass
class Answer:
    """One answer the run took: who (``key`` tells people apart), how, when."""

    key: str
    who: str
    how: str
    approve: bool
    reason: str | None
    when: float
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"who": self.who, "how": self.how, "when": iso_time(self.when), "when_unix": self.when,
                "answer": "approve" if self.approve else "deny", "reason": self.reason,
                **({"label": self.label} if self.label else {})}


OLD_TOKEN = ("the answer carries its token in the clear (written by an older nami): refused, since anyone who "
             "can read the queue folder could take the token and use it again; answer with this version of nami "
             "(it seals the token for the run that asked), or sign with your key ($NAMI_APPROVER_KEY)")


def identify(data: Mapping[str, Any], owner: int, approvers: Mapping[str, str],
             keys: Mapping[str, str] | None = None, answer_key: RunKey | None = None) -> tuple[str, str, str] | str:
    """(key, who, how) of an answer owned by ``owner``; or why it cannot count. The owner is the kernel's
    word (fstat); a signature is a named approver's only when made by their listed SSH key over what the
    answer says (its uid included); a token only when it was sealed for this run's ``answer_key`` over what
    the answer says (sealed_token.py) and its hash is listed. A token in the clear is refused."""
    if data.get("uid") != owner:
        return (f"the answer file belongs to {user_name(owner)} but claims to be "
                f"{user_name(data['uid']) if isinstance(data.get('uid'), int) else 'someone else'}'s")
    if data.get("signature") is not None:
        signed_by = signer(data, keys or {})
        if signed_by is not None:
            return f"approver:{signed_by}", signed_by, f"ssh key, as OS user {user_name(owner)}"
        return "the answer's signature ($NAMI_APPROVER_KEY) is not one by a key of approvals.approvers"
    if data.get("token") is not None:
        return OLD_TOKEN
    if data.get("sealed_token") is not None:
        token = answer_key.open(data["sealed_token"], data) if answer_key is not None else None
        if token is None:
            return ("the answer's token was not sealed for this run over what the answer says (copied from "
                    "another answer, or altered): it does not count")
        name = approver_named(token, approvers)
        if name is not None:
            return f"approver:{name}", name, f"token, as OS user {user_name(owner)}"
        return "the token given ($NAMI_APPROVER_TOKEN) is not one of approvals.approvers"
    return f"user:{owner}", user_name(owner), "OS user"


@dataclass
class Waiting:
    """One pending approval while its run waits for it."""

    folder: QueueFolder
    record: dict[str, Any]
    binding: Binding
    required: int
    expires: float
    approvers: Mapping[str, str]
    answers: list[Answer] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    keys: Mapping[str, str] = field(default_factory=dict)  # approvers' SSH public keys (signing.py)
    answer_key: RunKey | None = None  # what tokens are sealed for (sealed_token.py); its secret stays here

    @property
    def id(self) -> str:
        return str(self.record["id"])

    def publish(self) -> None:
        self.folder.create(f"{self.id}.json", self.record, 0o644)

    def update(self, state: str | None = None, outcome: str | None = None) -> None:
        if state is not None:
            self.record["state"] = state
        if outcome is not None:
            self.record["outcome"] = outcome
        self.record["approvals"] = [a.to_json() for a in self.answers]
        with contextlib.suppress(OSError):  # the wait goes on; `nami approvals` shows the state it last could
            self.folder.replace(f"{self.id}.json", self.record)

    def take(self) -> Decision | None:
        """Take the answers written since the last look: a deny ends the wait (any deny wins); approvals by
        enough different people end it too. None: wait on."""
        # Every new answer is read before any decides: an approval and a deny that came in together end as
        # the deny (any deny wins), whatever order their names sort in.
        decisions: list[Decision] = []
        for name in self.folder.answers(self.id):
            if name in self.seen:
                continue
            self.seen.add(name)
            stored = self.folder.read(name)
            if stored is None:
                continue
            decided = self._take_one(name, stored.data, stored.owner)
            if decided is not None:
                decisions.append(decided)
        denied = [decision for decision in decisions if decision.action == "deny"]
        return denied[0] if denied else (decisions[0] if decisions else None)

    def _take_one(self, name: str, data: Mapping[str, Any], owner: int) -> Decision | None:
        nonce = name[len(self.id) + len(".answer."):-len(".json")]
        who = identify(data, owner, self.approvers, self.keys, self.answer_key)
        if isinstance(who, str):
            self._receipt(nonce, False, who)
            return None
        key, person, how = who
        if data.get("id") != self.id or data.get("digest") != self.binding.digest:
            self._receipt(nonce, False, "the answer is for another version of this call (its digest differs): "
                                        "look at it again with `nami approvals show`")
            return None
        if any(answer.key == key for answer in self.answers):
            self._receipt(nonce, False, f"{person} has answered this approval already; a second answer by the "
                                        "same person does not count")
            return None
        approve = data.get("answer") == "approve"
        if approve and self.approvers and not key.startswith("approver:"):
            # Where approvals.approvers names who approves, an approval needs one of their tokens: anyone who
            # may write in the queue folder could otherwise approve as themselves. A deny counts from anyone.
            self._receipt(nonce, False, "approvals.approvers names who may approve here: sign with your key "
                                        "($NAMI_APPROVER_KEY) or give your token ($NAMI_APPROVER_TOKEN)")
            return None
        reason = " ".join(str(data.get("reason") or "").split()) or None
        label = str(data["label"]) if data.get("label") else None
        answer = Answer(key, person, how, approve, reason, time.time(), label)
        self.answers.append(answer)
        if not approve:
            self._receipt(nonce, True, "denied: the run is told" + (" why" if reason else ""))
            return Decision.deny(reason, f"{person} ({how}, {SOURCE} {self.id})") if reason else \
                Decision.deny(f"{person} said no ({how}, {SOURCE} {self.id})", f"{SOURCE} {self.id}")
        count = len(self.answers)
        if count < self.required:
            self._receipt(nonce, True, f"approved ({count} of {self.required} approvers)")
            self.update()
            return None
        self._receipt(nonce, True, "approved" + (f" ({count} of {self.required} approvers)" if self.required > 1
                                                 else ""))
        return Decision.allow(f"approved by {self.who()}", f"{SOURCE} {self.id}")

    def who(self) -> str:
        return ", ".join(f"{a.who} ({a.how}, {iso_time(a.when)}"
                         + (f", label {a.label}" if a.label else "") + ")" for a in self.answers)

    def _receipt(self, nonce: str, accepted: bool, message: str) -> None:
        with contextlib.suppress(OSError):  # the answer stays on disk: its writer sees no receipt and says so
            self.folder.create(f"{self.id}.receipt.{nonce}.json",
                               {"id": self.id, "accepted": accepted, "message": message}, 0o644)

    def expired(self, now: float) -> str | None:
        """Why the approvals given no longer count (the first is older than ``approvals.expires``)."""
        if self.required <= 1 or not self.answers:
            return None
        first = min(a.when for a in self.answers)
        if now - first > self.expires:
            return (f"the approvals expired: the first was given {int(now - first)}s before the last "
                    f"(approvals.expires is {int(self.expires)}s); call again to ask anew")
        return None


def stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


@dataclass
class QueueApprover:
    """An :data:`Approver` that keeps each question in the queue and waits for answers from it. ``required``:
    how many different people must approve a call (its target's ``approvals.required``); ``recheck``: the
    rules and the trust decided again when the approvals are in; ``say``: where the run says what it waits for."""

    folder: QueueFolder
    timeout: float
    expires: float
    approvers: Mapping[str, str]
    required: Callable[[PreparedCall], int] = lambda call: 1
    recheck: Recheck | None = None
    say: Callable[[str], None] = stderr_line
    session: Callable[[], str | None] = lambda: None
    workspace: str | None = None
    page_url: str | None = None
    notify: Notifier | None = None  # approvals.notify's webhook (notify.py)
    approver_keys: Mapping[str, str] = field(default_factory=dict)  # name -> SSH public key (signing.py)

    def __call__(self, request: ApprovalRequest) -> Decision:
        waiting = self.open(request)
        return self.wait(waiting, request)

    def open(self, request: ApprovalRequest) -> Waiting:
        binding = bind(request.call)
        required = max(1, self.required(request.call))
        self.folder.prune(time.time())
        answer_key = RunKey.new()
        while True:
            record = pending_record(request, new_id(), binding, required=required, timeout=self.timeout,
                                    expires=self.expires, session=self.session(), workspace=self.workspace,
                                    page_url=self.page_url, answer_key=answer_key)
            waiting = Waiting(self.folder, record, binding, required, self.expires, self.approvers,
                              keys=self.approver_keys, answer_key=answer_key)
            try:
                waiting.publish()
            except FileExistsError:
                continue  # someone holds that id: another
            break
        if self.notify is not None:
            self.notify(record)
        needs = f" ({required} different approvers)" if required > 1 else ""
        self.say(f"nami: waiting for approval {waiting.id}{needs} of {request.risk} tool {request.name}: "
                 f"{visible_line(record['describe'])}\n"
                 f"  approve: {record['answer']['approve']}\n  deny:    {record['answer']['deny']}")
        return waiting

    def wait(self, waiting: Waiting, request: ApprovalRequest,
             elsewhere: Callable[[], Decision | None] | None = None) -> Decision:
        """Wait for the answers (or ``elsewhere``'s, a terminal asking at the same time) until the timeout."""
        deadline = time.monotonic() + self.timeout
        try:
            with WAITS.waiting():  # not counted in a batch task's wall_time
                return self._wait(waiting, request, deadline, elsewhere)
        except KeyboardInterrupt:
            waiting.update(WITHDRAWN, "the run was interrupted while it waited")
            return Decision.deny(f"the wait for approval {waiting.id} was interrupted (Ctrl-C): not approved",
                                 SOURCE)
        except BaseException:
            waiting.update(WITHDRAWN, "the run ended while it waited")
            raise

    def _wait(self, waiting: Waiting, request: ApprovalRequest, deadline: float,
              elsewhere: Callable[[], Decision | None] | None) -> Decision:
        while True:
            decided = waiting.take() or (elsewhere() if elsewhere is not None else None)
            if decided is not None:
                return self.settle(waiting, request, decided)
            if time.monotonic() >= deadline:
                waiting.update(TIMED_OUT, "nobody answered in time")
                why = waiting.expired(time.time()) if waiting.answers else None
                return Decision.deny(f"nobody approved it within approvals.timeout ({int(self.timeout)}s; "
                                     f"approval {waiting.id})" + (f"; {why}" if why else ""), SOURCE)
            time.sleep(POLL_SECONDS)

    def settle(self, waiting: Waiting, request: ApprovalRequest, decided: Decision) -> Decision:
        """The answer, once checked again against what would run now: the same call (its digest), approvals
        still fresh, rules that still do not deny."""
        if decided.action != "allow":
            waiting.update(DENIED, decided.reason or "denied")
            return decided
        expired = waiting.expired(time.time())
        if expired is not None:
            waiting.update(REFUSED, expired)
            return Decision.deny(expired, SOURCE)
        changed = waiting.binding.changed(bind(request.call))
        if changed:
            why = (f"approval {waiting.id} was given for another call: {', '.join(changed)} changed since it "
                   "was asked; call again to ask anew")
            waiting.update(REFUSED, why)
            return Decision.deny(why, SOURCE)
        if self.recheck is not None:
            now = self.recheck(request.call)
            if now is not None and now.action == "deny":
                why = f"approved ({waiting.who()}), but refused now: {now.reason or 'denied'}"
                waiting.update(REFUSED, why)
                return Decision.deny(why, now.source or SOURCE)
        waiting.update(APPROVED, decided.reason)
        return decided


def queue_approver(settings: Any, *, folder: QueueFolder | None = None, **more: Any) -> Approver:
    """A :class:`QueueApprover` from typed ``approvals:`` settings (config.sections.ApprovalSettings)."""
    say = more.pop("say", stderr_line)
    failed = more.pop("not_notified", None)  # where a failed notification is recorded (the audit log)
    return QueueApprover(folder or QueueFolder.open(settings.path), settings.timeout, settings.expires,
                         dict(settings.approvers), page_url=settings.page_url, say=say,
                         approver_keys=dict(settings.approver_keys),
                         notify=webhook(settings.notify, os.environ, say, failed=failed), **more)
