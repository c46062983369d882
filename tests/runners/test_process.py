from __future__ import annotations

import contextlib
import http.server
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.env_secrets import NON_INTERACTIVE_ENV, EnvScrub, child_environment, is_secret_name
from nami_yaml.runners.output import cut_note
from nami_yaml.runners.process import ProcessRequest, ProcessResult, run_process


def _run(argv: list[str], cwd: Path, **kwargs: object) -> ProcessResult:
    # The process layer itself, unsandboxed (tests/runners/test_sandbox.py runs these mechanics in the sandbox).
    kwargs.setdefault("sandbox", None)
    request = ProcessRequest(argv=argv, cwd=cwd, env=child_environment(os.environ), **kwargs)  # type: ignore[arg-type]
    return run_process(request)


def _bash(script: str, cwd: Path, **kwargs: object) -> ProcessResult:
    return _run(["bash", "-c", script], cwd, **kwargs)


def _alive(pid: int) -> bool:
    """A zombie counts as dead: it runs nothing and only waits for init to reap it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] not in (b"Z", b"X")


def _dies_soon(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _first_pid(text: str) -> int:
    return int(text.split()[0])


def test_stdout_only(workdir: Path) -> None:
    result = _run(["echo", "hello"], workdir)
    assert result.ok
    assert result.exit_code == 0
    assert result.stdout == "hello\n"
    assert result.total_bytes == 6
    assert result.format() == "hello"


def test_stderr_and_exit_code_layout(workdir: Path) -> None:
    result = _bash("echo out; echo err >&2; exit 3", workdir)
    assert not result.ok
    assert result.exit_code == 3
    assert result.stderr == "err\n"
    assert result.format() == "out\n[stderr]\nerr\n[exit code: 3]"


def test_no_output(workdir: Path) -> None:
    assert _run(["true"], workdir).format() == "(no output)"
    assert _run(["false"], workdir).format() == "[exit code: 1]"


def test_runs_in_the_given_directory(workdir: Path) -> None:
    (workdir / "marker.txt").write_text("x")
    assert "marker.txt" in _run(["ls"], workdir).stdout


def test_missing_program_is_a_result(workdir: Path) -> None:
    result = _run(["definitely-not-a-program-nami"], workdir)
    assert result.exit_code == 127
    assert result.stderr == "command not found: definitely-not-a-program-nami"
    assert "[exit code: 127]" in result.format()


def test_non_executable_file_is_a_result(workdir: Path) -> None:
    script = workdir / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = _run([str(script)], workdir)
    assert result.exit_code == 126
    assert "permission denied" in result.stderr


def test_missing_interpreter_is_named(workdir: Path) -> None:
    script = workdir / "script.sh"
    script.write_text("#!/nonexistent/interpreter\necho hi\n")
    script.chmod(0o755)
    result = _run(["./script.sh"], workdir)
    assert result.exit_code == 127
    assert result.stderr == "cannot run ./script.sh: interpreter in its #! line not found"


def test_missing_working_directory_and_empty_argv(workdir: Path) -> None:
    result = _run(["true"], workdir / "gone")
    assert result.exit_code == 126 and "working directory not found" in result.stderr
    assert _run([], workdir).exit_code == 127


def test_signal_death_reports_negative_code(workdir: Path) -> None:
    result = _bash("kill -9 $$", workdir)
    assert result.exit_code == -9
    assert result.format() == "[exit code: -9 (SIGKILL)]"


def test_non_utf8_output_is_replaced(workdir: Path) -> None:
    result = _run(["printf", "a\\xff\\xfeb"], workdir)
    assert result.exit_code == 0
    assert result.stdout == "a\ufffd\ufffdb"


def test_stdin_is_dev_null_by_default(workdir: Path) -> None:
    result = _run(["cat"], workdir, timeout=30)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.format() == "(no output)"


def test_stdin_bytes_are_delivered(workdir: Path) -> None:
    result = _run(["cat"], workdir, stdin=b"line one\nline two\n")
    assert result.stdout == "line one\nline two\n"


def test_big_stdin_with_big_output_does_not_deadlock(workdir: Path) -> None:
    payload = os.urandom(2_500_000).hex().encode()  # 5 MB, far beyond any pipe buffer
    result = _run(["cat"], workdir, stdin=payload, timeout=60, max_output=1000)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.total_bytes == len(payload)
    assert result.stdout.startswith(payload[:500].decode())
    assert result.stdout.endswith(payload[-500:].decode())


def test_child_that_ignores_stdin_does_not_block_us(workdir: Path) -> None:
    result = _run(["true"], workdir, stdin=b"x" * 5_000_000, timeout=30)
    assert result.exit_code == 0 and not result.timed_out


def test_large_stderr_and_stdout_together(workdir: Path) -> None:
    script = "for i in $(seq 1 200); do head -c 20000 /dev/zero | tr '\\0' e >&2; head -c 20000 /dev/zero | tr '\\0' o; done"
    result = _bash(script, workdir, timeout=60, max_output=10_000)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.total_bytes == 8_000_000
    assert result.truncated
    assert result.stdout.startswith("o" * 5000)
    assert result.stderr.startswith("e" * 1000)


def test_runs_in_its_own_session(workdir: Path) -> None:
    code = "import os; print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())"
    assert _run([sys.executable, "-c", code], workdir).stdout == "True True\n"


def test_timeout_kills_the_whole_group_and_keeps_partial_output(workdir: Path) -> None:
    result = _bash("sleep 60 & echo $!; echo partial; wait", workdir, timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert not result.ok
    assert "partial" in result.stdout
    assert result.format().endswith("[timed out after 1 s; process group killed]")
    assert _dies_soon(_first_pid(result.stdout))


def test_timeout_escalates_to_sigkill(workdir: Path) -> None:
    script = "trap '' TERM; (trap '' TERM; sleep 60) & echo $!; while :; do sleep 0.1; done"
    result = _bash(script, workdir, timeout=1)
    assert result.timed_out
    assert _dies_soon(_first_pid(result.stdout))


def test_timeout_while_child_has_closed_its_output(workdir: Path) -> None:
    result = _bash("exec >&- 2>&-; sleep 60", workdir, timeout=1)
    assert result.timed_out


def test_child_that_closes_its_output_is_still_waited_for(workdir: Path) -> None:
    result = _bash("exec >&- 2>&-; sleep 0.5; exit 4", workdir, timeout=30)
    assert not result.timed_out
    assert result.exit_code == 4


def test_background_grandchild_holding_stdout_does_not_hang(workdir: Path) -> None:
    result = _bash("sleep 60 & echo $!", workdir, timeout=60)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.stragglers_killed
    assert "background processes" in result.format()
    assert _dies_soon(_first_pid(result.stdout))


@pytest.mark.parametrize("command", [
    "sleep 301 >/dev/null 2>&1 & echo $!",
    "nohup sleep 302 >/dev/null 2>&1 & echo $!",
    "(trap '' TERM; sleep 303) >/dev/null 2>&1 & echo $!",  # ignores SIGTERM: SIGKILL follows
    "disown -a; sleep 304 </dev/null >/dev/null 2>&1 & disown; echo $!",
])
def test_background_processes_die_when_the_tool_returns(workdir: Path, command: str) -> None:
    """A review found `sleep 301 & echo started` (output redirected) outliving the tool: whatever is left in
    the tool's process group is killed when the tool returns, not only on timeout."""
    result = _bash(command, workdir, timeout=30)
    pid = _first_pid(result.stdout)
    try:
        assert result.exit_code == 0 and result.ok
        assert _dies_soon(pid)
        assert result.format().endswith("[background processes the tool left running were killed]")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def test_a_process_that_leaves_the_group_with_setsid_escapes(workdir: Path) -> None:
    """The documented limit: a daemon started with setsid is in another session and survives."""
    result = _bash("setsid sleep 305 >/dev/null 2>&1 < /dev/null & sleep 0.2; pgrep -n -f 'sleep 305'", workdir)
    pid = _first_pid(result.stdout)
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, 9)


def test_cancel_kills_the_group(workdir: Path) -> None:
    cancel = threading.Event()
    timer = threading.Timer(1.0, cancel.set)
    timer.start()
    try:
        result = _bash("sleep 60 & echo $!; wait", workdir, timeout=60, cancel=cancel)
    finally:
        timer.cancel()
    assert result.interrupted
    assert not result.timed_out
    assert result.exit_code is None
    assert result.format().endswith("[interrupted]")
    assert _dies_soon(_first_pid(result.stdout))


def test_cancel_already_set_does_not_start_anything(workdir: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    result = _run(["touch", "created"], workdir, cancel=cancel)
    assert result.interrupted
    assert result.format() == "[interrupted]"
    assert not (workdir / "created").exists()


def test_truncated_output_is_spilled_in_full(workdir: Path, tmp_path: Path) -> None:
    spill_dir = tmp_path / "state" / "output"
    result = _run(["seq", "1", "100000"], workdir, max_output=1000, spill_dir=spill_dir)
    full = "".join(f"{i}\n" for i in range(1, 100001))
    assert result.exit_code == 0
    assert result.truncated
    assert result.total_bytes == len(full)
    assert result.spill_path is not None
    assert result.spill_path.parent == spill_dir
    assert stat.S_IMODE(spill_dir.stat().st_mode) == 0o700
    assert result.spill_path.read_text() == full
    assert result.stdout.startswith("1\n2\n3\n")
    assert result.stdout.endswith("99999\n100000\n")
    assert f"bytes omitted; full output: {result.spill_path}] ...\n" in result.stdout
    assert len(result.stdout) < 1200


def test_secret_names() -> None:
    for name in ("FOO_API_KEY", "MY_TOKEN", "db_password", "AWS_SECRET_ACCESS_KEY", "GH_CREDENTIALS"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "LANG", "KUBECONFIG", "SSH_AUTH_SOCK"):
        assert not is_secret_name(name), name


HIDDEN_SECRETS = {
    "MYSQL_PWD": "s1", "PGPASSWORD": "s2", "SMTP_PASS": "s3", "REDIS_PASSWD": "s4", "SENTRY_DSN": "s5",
    "NPM_CONFIG__AUTH": "s6", "GITHUB_AUTH": "s7", "GITLAB_PAT": "s8", "SESSION_COOKIE": "s9",
    "GPG_PASSPHRASE": "s10", "APP_PRIVATE": "s11", "CI_CREDS": "s12",
    "DATABASE_URL": "postgres://app:hunter2@db.internal:5432/app",
    "REDIS_URL": "redis://:hunter3@cache:6379/0", "UPSTREAM": "https://bot:tok@git.example/repo.git",
    "DEPLOY_IDENTITY": "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
}
HARMLESS = {"PWD": "/w", "OLDPWD": "/x", "SSH_AUTH_SOCK": "/tmp/agent", "GIT_AUTHOR_NAME": "A", "PASSTHRU": "1",
            "BYPASS_CACHE": "1", "HOMEPAGE_URL": "https://example.com/a@b", "MAIL": "user@example.com",
            "DOCS_URL": "https://host/path:x@y", "COMPASS_HEADING": "north"}


def test_secrets_under_other_names_or_inside_values_are_scrubbed(workdir: Path) -> None:
    """A review found these reaching tools: names without KEY/SECRET/TOKEN/PASSWORD/CREDENTIAL, and URLs
    with a password in them."""
    env = child_environment({**HIDDEN_SECRETS, **HARMLESS})
    assert sorted(set(HIDDEN_SECRETS) & set(env)) == []
    assert {name: env.get(name) for name in HARMLESS} == HARMLESS


def test_more_scrubbing_from_configured_patterns(workdir: Path) -> None:
    host = {"ACME_HOOK": "a", "acme_other": "b", "PLAIN": "slack xoxb-123", "KEEP": "yes", "WEBHOOK": "xoxb-99"}
    env = child_environment(host, scrub=EnvScrub(names=("acme_*",), values=("xoxb-*",)))
    assert env.get("KEEP") == "yes" and env.get("PLAIN") == "slack xoxb-123"
    assert not {"ACME_HOOK", "acme_other", "WEBHOOK"} & set(env)
    listed = child_environment(host, passthrough=["ACME_HOOK"], scrub=EnvScrub(names=("ACME_*",)))
    assert listed["ACME_HOOK"] == "a"  # a tool's env_passthrough still names what it needs


def test_secrets_never_reach_the_child(workdir: Path) -> None:
    host = dict(os.environ)
    host.update(
        FOO_API_KEY="s1", MY_TOKEN="s2", db_password="s3", AWS_SECRET_ACCESS_KEY="s4",
        GH_CREDENTIALS="s5", OPENAI_API_KEY="s6", NAMI_HARMLESS="visible", PAGER="less",
    )
    env = child_environment(
        host,
        passthrough=["MY_TOKEN", "OPENAI_API_KEY", "NOT_SET_ANYWHERE"],
        extra={"TOOL_MODE": "fixed", "NO_COLOR": "0", "OPENAI_API_KEY": "from-extra"},
        protected=["OPENAI_API_KEY"],
    )
    result = run_process(ProcessRequest(argv=["env"], cwd=workdir, env=env, sandbox=None))
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    for name in ("FOO_API_KEY", "db_password", "AWS_SECRET_ACCESS_KEY", "GH_CREDENTIALS", "OPENAI_API_KEY"):
        assert name not in seen, name
    assert "s6" not in result.stdout and "from-extra" not in result.stdout
    assert seen["MY_TOKEN"] == "s2"  # passthrough
    assert "NOT_SET_ANYWHERE" not in seen
    assert seen["NAMI_HARMLESS"] == "visible"
    assert seen["PAGER"] == "cat"  # non-interactive settings beat the host
    assert seen["GIT_TERMINAL_PROMPT"] == "0"
    assert seen["TOOL_MODE"] == "fixed"
    assert seen["NO_COLOR"] == "0"  # the tool's own env wins over the defaults
    assert seen["PATH"] == os.environ["PATH"]


def test_non_interactive_env_covers_the_usual_prompts() -> None:
    for name, value in {"GIT_TERMINAL_PROMPT": "0", "PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb",
                        "DEBIAN_FRONTEND": "noninteractive", "GIT_EDITOR": "true", "NO_COLOR": "1"}.items():
        assert NON_INTERACTIVE_ENV[name] == value
    assert "CI" not in NON_INTERACTIVE_ENV
    env = child_environment({"GIT_PAGER": "less -R"})
    assert env["GIT_PAGER"] == "cat"


class _AuthRequired(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="nami"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_git_fails_instead_of_prompting_for_credentials(workdir: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthRequired)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/repo.git"
        result = _run(["git", "clone", url, "x"], workdir, timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    assert not result.timed_out
    assert result.exit_code not in (0, None)
    assert "terminal prompts disabled" in result.stderr


@pytest.mark.parametrize("timed_out,interrupted,code,expected", [
    (False, False, 0, "out\n[stderr]\nwarn"),
    (False, False, 2, "out\n[stderr]\nwarn\n[exit code: 2]"),
    (True, False, None, "out\n[stderr]\nwarn\n[timed out after 2.5 s; process group killed]"),
    (False, True, None, "out\n[stderr]\nwarn\n[interrupted]"),
])
def test_format_status_lines(timed_out: bool, interrupted: bool, code: int | None, expected: str) -> None:
    result = ProcessResult(exit_code=code, stdout="out\n", stderr="warn\n", timed_out=timed_out,
                           interrupted=interrupted, truncated=False, total_bytes=9, spill_path=None,
                           duration=3.0, timeout=2.5)
    assert result.format() == expected


_MEMORY_PROBE = textwrap.dedent(
    """
    import json, os, resource, sys
    from pathlib import Path
    from nami_yaml.env_secrets import child_environment
    from nami_yaml.runners.process import ProcessRequest, run_process

    env = child_environment(os.environ)
    cwd = Path(sys.argv[1])
    run_process(ProcessRequest(argv=["true"], cwd=cwd, env=env, sandbox=None))  # imports and first-use costs
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_process(ProcessRequest(
        argv=["bash", "-c", "head -c 300000000 /dev/zero | tr '\\\\0' a"],
        cwd=cwd, env=env, timeout=600, spill_dir=Path(sys.argv[2]), max_saved=int(sys.argv[3]), sandbox=None,
    ))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "growth_kb": after - before, "total": result.total_bytes, "timed_out": result.timed_out,
        "exit": result.exit_code, "spill": str(result.spill_path),
        "spill_size": result.spill_path.stat().st_size if result.spill_path else -1,
        "shown": len(result.stdout), "tail": result.stdout[-20:], "saved_capped": result.saved_capped,
    }))
    """
)


def _probe(workdir: Path, spill_dir: Path, max_saved: int) -> dict[str, Any]:
    probe = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, str(workdir), str(spill_dir), str(max_saved)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert probe.returncode == 0, probe.stderr
    return json.loads(probe.stdout)


def test_huge_output_keeps_memory_flat_and_spills_everything(workdir: Path, tmp_path: Path) -> None:
    report = _probe(workdir, tmp_path / "spill", 400_000_000)
    try:
        assert not report["timed_out"]
        assert report["exit"] == 0
        assert report["total"] == 300_000_000
        assert report["spill_size"] == 300_000_000
        assert report["tail"] == "a" * 20
        assert report["shown"] < 50_200
        assert report["growth_kb"] < 30 * 1024, report
    finally:
        Path(report["spill"]).unlink(missing_ok=True)  # do not leave 300 MB in pytest's tmp dirs


def test_past_the_saved_cap_the_pipe_is_drained_with_memory_flat(workdir: Path, tmp_path: Path) -> None:
    """300 MB through a 1 MB saved-output cap: read to the end, the tail kept, memory as flat as ever."""
    report = _probe(workdir, tmp_path / "spill", 1_000_000)
    assert (report["exit"], report["timed_out"], report["total"]) == (0, False, 300_000_000)
    assert report["saved_capped"] and 0 < report["spill_size"] <= 1_000_000
    assert report["tail"] == "a" * 20
    assert report["growth_kb"] < 30 * 1024, report


def test_saved_output_is_capped_by_default(workdir: Path, tmp_path: Path) -> None:
    """A review wrote 4 GB + 1.7 GB of saved output from one call; the default cap is 64 MB per call."""
    spill_dir = tmp_path / "spill"
    result = _run(["head", "-c", "80000000", "/dev/zero"], workdir, max_output=1000, spill_dir=spill_dir)
    saved = sum(p.stat().st_size for p in spill_dir.iterdir())
    assert saved <= 64_000_000
    assert result.spill_path is not None and 63_999_000 < result.spill_path.stat().st_size <= 64_000_000
    assert result.ok and result.exit_code == 0 and result.total_bytes == 80_000_000


CHATTY = """\
import sys
for n in range(20_000):
    print(f"step {n}: resource {n} created")
print("Error: creating resource web: quota exceeded", file=sys.stderr)
print("Apply failed: 1 error")
sys.exit(3)
"""


def test_a_chatty_tool_past_the_saved_cap_runs_to_its_end_and_keeps_its_tail(workdir: Path, tmp_path: Path) -> None:
    """A verbose `terraform apply` must never be stopped for its output: the error is at the end."""
    spill_dir = tmp_path / "spill"
    result = _run([sys.executable, "-c", CHATTY], workdir, max_output=1000, spill_dir=spill_dir, max_saved=50_000,
                  timeout=60)
    assert result.exit_code == 3 and not result.timed_out and not result.interrupted  # it exited by itself
    assert result.total_bytes > 600_000 and result.saved_capped
    assert result.stdout.endswith("step 19999: resource 19999 created\nApply failed: 1 error\n")
    assert "Error: creating resource web: quota exceeded" in result.stderr
    text = result.format()
    assert text.endswith("[exit code: 3]")
    assert f"bytes saved: {result.spill_path}" in text
    assert "stopped" not in text
    assert result.spill_path is not None
    saved = result.spill_path.read_bytes()
    assert len(saved) <= 50_000
    assert saved.startswith(b"step 0: resource 0 created\n")
    assert saved.endswith(cut_note(50_000)) and b"(50,000 bytes for one call)" in cut_note(50_000)
    assert sum(p.stat().st_size for p in spill_dir.iterdir()) <= 50_000


def test_a_tool_that_never_stops_printing_ends_at_its_timeout(workdir: Path, tmp_path: Path) -> None:
    result = _run(["yes", "spam"], workdir, max_output=1000, spill_dir=tmp_path / "spill", max_saved=200_000,
                  timeout=1.5)
    assert result.timed_out and not result.ok and result.saved_capped
    assert result.stdout.endswith("spam\n")  # the tail, read until the end
    assert result.format().endswith("[timed out after 1.5 s; process group killed]")
    assert result.spill_path is not None and result.spill_path.stat().st_size <= 200_000


def test_the_namespace_last_pid_moves_with_every_new_process() -> None:
    from nami_yaml.runners.process import _last_pid

    first = subprocess.Popen(["true"])
    seen = _last_pid()
    second = subprocess.Popen(["true"])
    first.wait()
    second.wait()
    if seen is None:
        pytest.skip("no /proc/sys/kernel/ns_last_pid on this system")
    assert _last_pid() != seen


@pytest.mark.parametrize(("nothing_since", "scans"), [(True, 0), (False, 1)])
def test_the_process_list_is_read_only_when_something_was_started_since_the_tool(
        workdir: Path, monkeypatch: pytest.MonkeyPatch, nothing_since: bool, scans: int) -> None:
    """A finished call reads every process's /proc entry to see whether its group left anything running;
    when no process was created since the tool's own, its group can only hold the tool's zombie."""
    from nami_yaml.runners import process

    read: list[int] = []
    real = process.processes
    monkeypatch.setattr(process, "processes", lambda: read.append(1) or real())
    children: list[int] = []
    real_popen = subprocess.Popen

    def popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        child = real_popen(*args, **kwargs)  # type: ignore[call-overload]
        children.append(child.pid)
        return child

    monkeypatch.setattr(process.subprocess, "Popen", popen)
    monkeypatch.setattr(process, "_last_pid", lambda: children[-1] if nothing_since else children[-1] + 1)
    result = _run(["echo", "ok"], workdir)
    assert result.ok and result.stdout == "ok\n" and len(children) == 1
    assert len(read) == scans


def test_the_host_environment_is_judged_once_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call of a run starts from the same host environment: which variables look secret is decided
    once for it, and a changed environment is judged afresh."""
    from nami_yaml import env_secrets as process

    process._kept.cache_clear()
    judged: list[str] = []
    real = process.is_secret
    monkeypatch.setattr(process, "is_secret", lambda name, value, scrub=None: judged.append(name) or real(name, value, scrub))
    host = {"PATH": "/usr/bin", "HOME": "/home/x", "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ODD": "v"}
    scrub = EnvScrub(names=("ODD",))
    for _ in range(5):
        env = child_environment(host, protected=("HOME",), scrub=scrub, extra={"X": "1"})
        assert "GITHUB_TOKEN" not in env and "ODD" not in env and "HOME" not in env
        assert env["PATH"] == "/usr/bin" and env["X"] == "1" and env["PAGER"] == NON_INTERACTIVE_ENV["PAGER"]
    assert sorted(judged) == ["GITHUB_TOKEN", "ODD", "PATH"]  # HOME is protected: never judged
    host["NEW"] = "value"
    assert child_environment(host, protected=("HOME",), scrub=scrub)["NEW"] == "value"
    assert len(judged) == 3 + 4
