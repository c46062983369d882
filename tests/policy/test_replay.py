"""What a line of the audit log says the policy decided at the time: an ask when someone answered it."""

from __future__ import annotations

from typing import Any

import pytest

from nami_yaml.policy.replay import was_decided


@pytest.mark.parametrize(("record", "was"), [
    ({"decision": "allow", "decided_by": "user", "asked_by": "permissions.exec"}, ("ask", "permissions.exec")),
    ({"decision": "deny", "decided_by": "no approver", "asked_by": "rule agent.yaml:3:5"}, ("ask", "rule agent.yaml:3:5")),
    ({"decision": "allow", "decided_by": "rule agent.yaml:3:5"}, ("allow", "rule agent.yaml:3:5")),
    ({"decision": "deny", "decided_by": "permissions.exec"}, ("deny", "permissions.exec")),
    ({"decision": "allow", "decided_by": None}, ("allow", None)),
    # lines written before asked_by was recorded: an answer means the policy asked
    ({"decision": "allow", "decided_by": "--yes"}, ("ask", None)),
    ({"decision": "allow", "decided_by": "--approve write"}, ("ask", None)),
    ({"decision": "allow", "decided_by": "user (for this session)"}, ("ask", None)),
    ({"decision": "deny", "decided_by": "user"}, ("ask", None)),
])
def test_what_was_decided(record: dict[str, Any], was: tuple[str, str | None]) -> None:
    assert was_decided(record) == was
