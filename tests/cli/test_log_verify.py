"""``nami log --verify / --head / --anchor``: the audit log's hash chain finds an edit, a deletion, a swap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml import Agent
from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import ScriptedModel, call, text, tool_calls
from tests.helpers import nami


@pytest.fixture
def log(workdir: Path) -> Path:
    """Five records: four bash calls allowed or denied, then a read, from two agents (two sessions)."""
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [bash, read_file]}\n"
        "rules:\n  - tool: bash\n    command: [echo]\n    decision: allow\n"
        "  - tool: bash\n    command: rm\n    decision: deny\n")
    (workdir / "a.txt").write_text("a\n")
    Agent.from_config(client=ScriptedModel([
        tool_calls(*(call("bash", {"command": f"echo {n}"}) for n in range(3)), call("bash", {"command": "rm x"})),
        text("ok")]), trust=True).run("x")
    Agent.from_config(client=ScriptedModel([tool_calls(call("read_file", {"path": "a.txt"})), text("ok")]),
                      trust=True).run("y")
    path = default_audit_path()
    assert len(path.read_text().splitlines()) == 5
    return path


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines()


def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def verify(*args: str) -> tuple[int, str, dict]:
    shown = nami("log", "--verify", *args)
    as_json = nami("log", "--verify", "--json", *args)
    return shown.exit_code, shown.stdout, json.loads(as_json.stdout)


def test_an_untouched_log_verifies_and_each_record_names_the_one_before(log: Path) -> None:
    records = [json.loads(line) for line in lines_of(log)]
    assert records[0]["prev"] == "start"
    assert [r["prev"] for r in records[1:]] == [r["hash"] for r in records[:-1]]
    code, out, report = verify()
    assert code == 0, out
    assert "is intact: 5 records chained from line 1" in out
    assert report["ok"] and report["head"] == records[-1]["hash"]
    head = nami("log", "--head")
    assert head.exit_code == 0 and head.stdout.strip() == records[-1]["hash"]


def test_an_edited_record_is_named(log: Path) -> None:
    lines = lines_of(log)
    lines[2] = lines[2].replace('"decision":"allow"', '"decision":"deny"')  # a quiet edit with sed
    write(log, lines)
    code, out, report = verify()
    assert code == 1
    assert "the first bad record is line 3" in out
    assert report["problems"][0] == {"line": 3, "problem": "changed after it was written: its hash does not "
                                                            "match its text"}


def test_an_edit_that_recomputes_its_own_hash_shows_on_the_next_record(log: Path) -> None:
    from nami_yaml.policy.audit_chain import seal

    lines = lines_of(log)
    record = json.loads(lines[1])
    record["decision"] = "deny"
    del record["hash"]
    lines[1] = seal(json.dumps(record, separators=(",", ":")).encode())[0].decode()
    write(log, lines)
    code, out, report = verify()
    assert code == 1
    assert report["problems"][0]["line"] == 3
    assert "it does not follow line 2" in report["problems"][0]["problem"]


def test_a_deleted_record_is_named(log: Path) -> None:
    lines = lines_of(log)
    del lines[2]
    write(log, lines)
    code, out, report = verify()
    assert code == 1 and "the first bad record is line 3" in out
    assert [p["line"] for p in report["problems"]] == [3]


def test_swapped_records_are_named(log: Path) -> None:
    lines = lines_of(log)
    lines[1], lines[2] = lines[2], lines[1]
    write(log, lines)
    code, out, report = verify()
    assert code == 1 and "the first bad record is line 2" in out


def test_a_cut_start_is_named(log: Path) -> None:
    write(log, lines_of(log)[1:])
    code, out, report = verify()
    assert code == 1 and "line 1: the records before it are missing" in out


def test_a_cut_tail_passes_alone_and_fails_against_an_anchor(log: Path) -> None:
    head = nami("log", "--head").stdout.strip()
    write(log, lines_of(log)[:-1])
    assert verify()[0] == 0  # a shorter chain is still a chain: what a local chain cannot prove
    code, out, report = verify("--anchor", head)
    assert code == 1 and "no record has this hash" in out and report["anchor_line"] is None
    earlier = json.loads(lines_of(log)[1])["hash"]
    code, out, report = verify("--anchor", earlier[:12])
    assert code == 0 and report["anchor_line"] == 2


def test_a_record_cut_short_by_a_failed_write_is_covered_by_the_next(log: Path, workdir: Path) -> None:
    with log.open("ab") as handle:
        handle.write(b'{"time":"2026-01-01T00:00:00.000Z","tool":"ba')  # a crash mid-write
    Agent.from_config(client=ScriptedModel([tool_calls(call("read_file", {"path": "a.txt"})), text("ok")]),
                      trust=True).run("z")
    code, out, report = verify()
    assert code == 0, out
    assert report["not_records"] == [6] and report["records"] == 6


def test_records_from_before_the_chain_are_reported_not_covered(workdir: Path) -> None:
    path = default_audit_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"tool":"bash","status":"ran"}\n')
    (workdir / "agent.yaml").write_text("tools: {builtin: [read_file]}\n")
    (workdir / "a.txt").write_text("a\n")
    Agent.from_config(client=ScriptedModel([tool_calls(call("read_file", {"path": "a.txt"})), text("ok")]),
                      trust=True).run("z")
    code, out, report = verify()
    assert code == 0, out
    assert report["before_chain"] == 1 and "predate the chain" in out
    lines = lines_of(path)
    write(path, [lines[1], lines[0]])  # an old-style record slipped in after the chain started
    assert verify()[0] == 1


def test_anchor_needs_verify_and_a_hash() -> None:
    assert nami("log", "--anchor", "abcdef12").exit_code == 2
    assert nami("log", "--verify", "--anchor", "not-a-hash").exit_code == 2
