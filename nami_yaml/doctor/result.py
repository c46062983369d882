"""One line of `nami doctor`: a named check, its status and what it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, WARN or FAIL
    message: str
    details: list[str] = field(default_factory=list)  # more lines, e.g. each problem of agent.yaml

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "message": self.message, "details": self.details}
