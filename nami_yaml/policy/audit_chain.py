"""The audit log's hash chain: each record carries the hash of the record before it, and its own.

A record's line ends ``…,"prev":"<hash of the line before>","hash":"<sha256 of the line up to prev>"}``:
``hash`` is the SHA-256 of the line's own text with the ``,"hash":"…"`` part left out, so an edit that
does not recompute it shows on the line itself, and ``prev`` ties it to the line before, so a removed,
inserted or reordered record shows on the line after it. The first record of a file has
``"prev": "start"`` (the recorded start): a file whose first lines were cut shows it on its new first line.

The chain is per file and computed at write time, under the log's exclusive lock (policy/audit.py
``append_line``): the writer reads the file's last line, whichever nami process wrote it, so concurrent
writers extend one chain. A writer that may append but not read the log (a write-only shared log)
writes ``"prev": null``: its records still carry their own hash, and their link is reported as unchecked.

A line that is not a record (cut short by a failed write, or written before the chain existed) has the
SHA-256 of its bytes as its hash, so the next record still vouches for it.

What this proves, and what not (docs/security.md): whoever can rewrite the file can recompute every hash,
and a cut tail leaves a valid chain. Only a hash kept elsewhere (``nami log --head``, shipped records)
anchors the past: ``verify(…, anchor=HASH)`` fails unless a record with that hash is still there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START = "start"  # the prev of a file's first record
_SEAL = re.compile(rb',"hash":"([0-9a-f]{64})"}$')
TAIL_CHUNK = 1 << 16


def seal(body: bytes) -> tuple[bytes, str]:
    """The line for a record serialized as ``body`` (a JSON object whose last key is ``prev``), and its hash."""
    digest = hashlib.sha256(body).hexdigest()
    return body[:-1] + f',"hash":"{digest}"}}'.encode("ascii"), digest


def line_hash(line: bytes) -> str:
    """The hash the next record's ``prev`` names: a record's own, else the SHA-256 of the line's bytes."""
    sealed = _SEAL.search(line)
    return sealed.group(1).decode("ascii") if sealed else hashlib.sha256(line).hexdigest()


def previous_hash(fd: int) -> str:
    """The hash of the last non-blank line of the file open (readable) at ``fd``, or START when it has none.
    Reads backwards from the end in chunks: the log may be large, its lines up to a few hundred KB."""
    end = os.fstat(fd).st_size
    tail = b""
    while end > 0:
        start = max(0, end - TAIL_CHUNK)
        tail = os.pread(fd, end - start, start) + tail
        end = start
        stripped = tail.rstrip(b"\n")
        if stripped and (b"\n" in stripped or end == 0):
            return line_hash(stripped.rsplit(b"\n", 1)[-1])
    return START


# -- checking ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    line: int
    message: str


@dataclass
class Verdict:
    """What ``verify`` found: the problems (the first one first), what was checked, the head."""

    problems: list[Problem] = field(default_factory=list)
    records: int = 0  # records with a hash, checked
    first_chained: int | None = None  # the line number of the first record with a hash
    before_chain: int = 0  # records written before the chain existed (not covered)
    not_records: list[int] = field(default_factory=list)  # lines that are not JSON (cut short)
    unlinked: list[int] = field(default_factory=list)  # records whose writer could not read the log
    head: str | None = None  # the last record's hash
    head_line: int | None = None
    anchor: str | None = None
    anchor_line: int | None = None  # where the anchor was found, if it was

    @property
    def ok(self) -> bool:
        return not self.problems and (self.anchor is None or self.anchor_line is not None)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "records": self.records, "first_chained_line": self.first_chained,
                "before_chain": self.before_chain, "not_records": self.not_records, "unlinked": self.unlinked,
                "head": self.head, "head_line": self.head_line, "anchor": self.anchor,
                "anchor_line": self.anchor_line,
                "problems": [{"line": p.line, "problem": p.message} for p in self.problems]}


def raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes without the newline) of each non-blank line."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.rstrip(b"\n")
            if line.strip():
                yield number, line


def verify(lines: Iterable[tuple[int, bytes]], anchor: str | None = None) -> Verdict:
    """Check every record's own hash and its link to the line before; find ``anchor`` (a hash, or its
    first 8+ characters) among the records."""
    verdict = Verdict(anchor=anchor.lower() if anchor else None)
    expected, previous_line = START, None
    for number, line in lines:
        sealed = _SEAL.search(line)
        if sealed is None:
            _unsealed(verdict, number, line)
        else:
            digest = sealed.group(1).decode("ascii")
            _check_record(verdict, number, line, digest, expected, previous_line)
            verdict.records += 1
            verdict.head, verdict.head_line = digest, number
            if verdict.first_chained is None:
                verdict.first_chained = number
            if verdict.anchor and verdict.anchor_line is None and digest.startswith(verdict.anchor):
                verdict.anchor_line = number
        expected, previous_line = line_hash(line), number
    return verdict


def _unsealed(verdict: Verdict, number: int, line: bytes) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        verdict.not_records.append(number)  # a line cut short: the next record's prev covers its bytes
    elif verdict.first_chained is None:
        verdict.before_chain += 1
    else:
        verdict.problems.append(Problem(number, "a record without a hash inside the chain: inserted, or its "
                                                "hash removed"))


def _check_record(verdict: Verdict, number: int, line: bytes, digest: str, expected: str,
                  previous_line: int | None) -> None:
    body = line[: -len(_SEAL.search(line).group(0))] + b"}"  # type: ignore[union-attr]
    if hashlib.sha256(body).hexdigest() != digest:
        verdict.problems.append(Problem(number, "changed after it was written: its hash does not match its text"))
        return
    try:
        prev = json.loads(line).get("prev", START)
    except (ValueError, AttributeError):
        verdict.problems.append(Problem(number, "not a JSON object, yet it carries a hash"))
        return
    if prev is None:
        verdict.unlinked.append(number)
    elif prev != expected:
        if previous_line is None:
            what = "the records before it are missing: the start of the file was cut"
        elif prev == START:
            what = f"it says it starts the file, yet line {previous_line} comes before it: inserted or moved"
        else:
            what = (f"it does not follow line {previous_line}: a record between them was removed, line "
                    f"{previous_line} was changed or inserted, or the records were reordered")
        verdict.problems.append(Problem(number, what))
