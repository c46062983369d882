"""The sandbox, with the real bwrap: what a tool's process can write, read and reach, and what outlives it.

Every test here needs bubblewrap able to make its namespaces; where it cannot, they skip saying why (CI
sets NAMI_REQUIRE_BWRAP=1, and there they fail instead).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins.shell import bash
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import check_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runners import process as process_module
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.sensitive_paths import ProtectedPaths
from tests.local_http import QuietHandler, serving
from tests.programs import needs
from tests.sandboxing import gone, kill, need_bwrap, running

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    need_bwrap()


def tools(ctx: RuntimeContext, text: str) -> Executor:
    path = ctx.workspace.parent / "tools" / "tools.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    loaded, problems = check_tools([path])
    assert [p for p in problems if p.is_error] == [], problems
    return Executor(Registry(loaded), ctx)


def with_sandbox(ctx: RuntimeContext, **settings: object) -> RuntimeContext:
    return replace(ctx, sandbox=replace(ctx.sandbox, **settings))  # type: ignore[arg-type]


class Hello(QuietHandler):
    def do_GET(self) -> None:
        self.reply(200, b"hello from the host")


FETCH = f"{sys.executable} -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())'"


# -- writing -----------------------------------------------------------------------------------------------

def test_bash_writes_the_workspace_and_nothing_outside(ctx: RuntimeContext, temp_home: Path) -> None:
    outside = Path("/var/tmp") / f"nami-sandbox-{os.getpid()}"
    result = bash(f"echo in > inside.txt && echo home > ~/planted; echo out > {outside}", ctx=ctx)
    assert (ctx.workspace / "inside.txt").read_text() == "in\n"
    assert not outside.exists() and not (temp_home / "planted").exists()
    assert "Read-only file system" in result.content
    assert result.details["sandbox_failure"]["kind"] == "write"
    assert "[sandbox: writing ~/planted was refused" in result.content  # the first refusal is named
    assert "declare it in agent.yaml (or your user config): sandbox: {writable: [~/planted]}" in result.content


def test_a_command_tool_cannot_write_outside_the_workspace(ctx: RuntimeContext) -> None:
    executor = tools(ctx, "name: touch\ndescription: d\nrisk: write\n"
                          "parameters: {type: object, properties: {path: {type: string}}, required: [path]}\n"
                          "command: [touch, '{path}']\n")
    outside = Path("/var/tmp") / f"nami-sandbox-touch-{os.getpid()}"
    result = executor.execute("touch", {"path": str(outside)})
    assert not result.ok and not outside.exists()
    assert "sandbox: {writable: [/var/tmp/" in result.content and "its tool file (" in result.content
    assert executor.execute("touch", {"path": "made-here"}).ok
    assert (ctx.workspace / "made-here").exists()


def test_writable_paths_of_the_settings_and_of_a_tool(ctx: RuntimeContext, temp_home: Path) -> None:
    cache = temp_home / ".cache" / "build"
    cache.mkdir(parents=True)
    result = bash("echo x > ~/.cache/build/obj && echo y > ~/.cache/other", ctx=with_sandbox(ctx, writable=("~/.cache/build",)))
    assert (cache / "obj").read_text() == "x\n"
    assert not (temp_home / ".cache" / "other").exists() and "writing ~/.cache/other was refused" in result.content
    executor = tools(ctx, "name: w\ndescription: d\nscript: echo t > ~/.cache/build/tool\nsandbox: {writable: [~/.cache/build]}\n")
    assert executor.execute("w", {}).ok and (cache / "tool").read_text() == "t\n"


def test_an_approved_writes_destination_outside_is_written_and_nothing_beside_it(ctx: RuntimeContext,
                                                                                 tmp_path: Path) -> None:
    executor = tools(ctx, "name: export\ndescription: d\nrisk: write\nwrites: [out]\n"
                          "parameters: {type: object, properties: {out: {type: string}}, required: [out]}\n"
                          "script: echo report > \"$out\"; echo beside > \"$out.bak\"\n")
    target = Path("/var/tmp") / f"nami-sandbox-report-{os.getpid()}"
    try:
        prepared = executor.prepare("export", {"out": str(target)})
        assert isinstance(prepared, PreparedToolCall)
        prepared.invocation.allow_writes([target])  # type: ignore[attr-defined]
        assert str(target) in prepared.plan()["sandbox"]["writable"]
        result = prepared.run()
        assert target.read_text() == "report\n"
        assert not Path(f"{target}.bak").exists() and "Read-only file system" in result.content
    finally:
        target.unlink(missing_ok=True)


def test_where_a_write_runs_code_later_stays_read_only(ctx: RuntimeContext) -> None:
    git = ctx.workspace / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n")
    (ctx.workspace / "agent.yaml").write_text("model: {name: m}\n")
    guarded = replace(ctx, protected_paths=ProtectedPaths.build(files=[(ctx.workspace / "agent.yaml", "config")]))
    result = bash("echo 'rm -rf ~' > .git/hooks/pre-commit; echo '[core] fsmonitor = x' >> .git/config; "
                  "echo 'permissions: {exec: allow}' >> agent.yaml; echo ok > notes.txt", ctx=guarded)
    assert not (git / "hooks" / "pre-commit").exists()
    assert (git / "config").read_text() == "[core]\n"
    assert (ctx.workspace / "agent.yaml").read_text() == "model: {name: m}\n"
    assert (ctx.workspace / "notes.txt").read_text() == "ok\n"
    assert "nami keeps" in result.content and "read-only in the sandbox" in result.content


def test_mode_read_only_keeps_the_workspace_as_it_is(ctx: RuntimeContext) -> None:
    (ctx.workspace / "kept.txt").write_text("as it was\n")
    result = bash("cat kept.txt; echo changed > kept.txt", ctx=with_sandbox(ctx, mode="read-only"))
    assert "as it was" in result.content
    assert (ctx.workspace / "kept.txt").read_text() == "as it was\n"
    assert "sandbox.mode: read-only" in result.content


# -- reading -----------------------------------------------------------------------------------------------

def test_the_home_folder_is_empty_but_for_what_a_call_declares(ctx: RuntimeContext, temp_home: Path) -> None:
    (temp_home / "notes.txt").write_text("NOTES\n")
    (temp_home / ".pgpass").write_text("db:5432:*:me:PG-SECRET\n")  # on no list: hidden with the rest of home
    (temp_home / ".config" / "tool").mkdir(parents=True)
    (temp_home / ".config" / "tool" / "settings").write_text("DECLARED\n")
    result = bash("cat ~/notes.txt ~/.pgpass; ls -A ~; echo x > ~/planted", ctx=ctx)
    assert "NOTES" not in result.content and "PG-SECRET" not in result.content
    assert not (temp_home / "planted").exists() and "Read-only file system" in result.content
    # The first thing refused is named, with the key that shows it.
    assert "~/notes.txt is in the home folder, which the sandbox hides" in result.content
    assert "sandbox: {reads: [~/notes.txt]}" in result.content
    declared = bash("cat ~/.config/tool/settings; cat ~/notes.txt", ctx=with_sandbox(ctx, reads=("~/.config/tool",)))
    assert "DECLARED" in declared.content and "NOTES" not in declared.content


def test_credentials_show_nothing_even_where_home_is_shown(ctx: RuntimeContext, temp_home: Path) -> None:
    (temp_home / ".ssh").mkdir()
    (temp_home / ".ssh" / "id_ed25519").write_text("SSH-SECRET\n")
    (temp_home / ".aws").mkdir()
    (temp_home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = AWS-SECRET\n")
    (temp_home / ".netrc").write_text("machine x password NETRC-SECRET\n")
    (temp_home / ".docker").mkdir()
    (temp_home / ".docker" / "config.json").write_text('{"auths": {"x": {"auth": "DOCKER-SECRET"}}}')
    (temp_home / "notes.txt").write_text("not a secret\n")
    result = bash("cat ~/notes.txt; cat ~/.ssh/id_*; cat ~/.aws/credentials; cat ~/.netrc ~/.docker/config.json; "
                  "ls -A ~/.ssh ~/.aws; wc -c < ~/.netrc", ctx=with_sandbox(ctx, reads=("~",)))
    assert "not a secret" in result.content  # the home folder, declared whole, is there read-only
    for secret in ("SSH-SECRET", "AWS-SECRET", "NETRC-SECRET", "DOCKER-SECRET", "id_ed25519", "credentials\n"):
        assert secret not in result.content, result.content
    assert "\n0\n" in result.content + "\n"  # a hidden file is an empty file


def test_a_file_a_credential_variable_names_is_hidden_wherever_it_is(ctx: RuntimeContext) -> None:
    (ctx.workspace / "creds.ini").write_text("[default]\naws_secret_access_key = AWS-SECRET\n")
    (ctx.workspace / "other.ini").write_text("PLAIN\n")
    named = replace(ctx, host_env={**ctx.host_env, "AWS_SHARED_CREDENTIALS_FILE": str(ctx.workspace / "creds.ini")})
    result = bash("cat creds.ini other.ini", ctx=named)
    assert "AWS-SECRET" not in result.content and "PLAIN" in result.content
    assert "AWS-SECRET" in bash("cat creds.ini", ctx=ctx).content  # named by no variable: a workspace file


def test_credentials_under_an_xdg_config_home_outside_home_are_hidden(ctx: RuntimeContext) -> None:
    config = ctx.workspace / "cfg"
    (config / "gh").mkdir(parents=True)
    (config / "gh" / "hosts.yml").write_text("oauth_token: GH-SECRET\n")
    (config / "other").mkdir()
    (config / "other" / "settings").write_text("PLAIN\n")
    moved = replace(ctx, host_env={**ctx.host_env, "XDG_CONFIG_HOME": str(config)})
    result = bash("cat cfg/gh/hosts.yml cfg/other/settings", ctx=moved)
    assert "GH-SECRET" not in result.content and "PLAIN" in result.content


def test_a_tool_reads_what_it_declares_and_no_more(ctx: RuntimeContext, temp_home: Path) -> None:
    (temp_home / ".kube").mkdir()
    (temp_home / ".kube" / "config").write_text("clusters: [prod]\n")
    (temp_home / ".kube" / "other-token").write_text("TOKEN\n")
    executor = tools(ctx, "name: kube\ndescription: d\nrisk: read\nscript: cat ~/.kube/config; ls -A ~/.kube\n"
                          "sandbox: {reads: [~/.kube/config]}\n")
    result = executor.execute("kube", {})
    assert "clusters: [prod]" in result.content and "other-token" not in result.content
    denied = bash("cat ~/.kube/config", ctx=ctx)
    assert "clusters" not in denied.content
    assert "~/.kube/config is hidden from tools" in denied.content and "sandbox: {reads: [~/.kube/config]}" in denied.content


def test_nami_own_folders_are_neither_readable_nor_writable(ctx: RuntimeContext, temp_home: Path) -> None:
    state = temp_home / ".local" / "state" / "nami"
    config = temp_home / ".config" / "nami"
    state.mkdir(parents=True, exist_ok=True)
    config.mkdir(parents=True, exist_ok=True)
    (state / "trust.json").write_text('{"TRUST": 1}')
    (config / "config.yaml").write_text("SECRET_CONFIG: 1\n")
    result = bash("cat ~/.local/state/nami/trust.json ~/.config/nami/config.yaml; ls -A ~/.local/state/nami; "
                  "echo planted > ~/.config/nami/config.yaml", ctx=with_sandbox(ctx, reads=("~/.config/nami",)))
    assert "TRUST" not in result.content and "SECRET_CONFIG" not in result.content
    assert (config / "config.yaml").read_text() == "SECRET_CONFIG: 1\n"
    assert "one of nami's own folders" in result.content


def test_the_sessions_saved_output_stays_readable(ctx: RuntimeContext) -> None:
    ctx.spill_dir.mkdir(parents=True, exist_ok=True)
    (ctx.spill_dir / "out.txt").write_text("saved earlier\n")
    result = bash(f"cat {ctx.spill_dir}/out.txt; echo x > {ctx.spill_dir}/new.txt", ctx=ctx)
    assert "saved earlier" in result.content and not (ctx.spill_dir / "new.txt").exists()


# -- the network -------------------------------------------------------------------------------------------

def test_bash_cannot_reach_the_host_while_a_tool_declaring_network_can(ctx: RuntimeContext) -> None:
    with serving(Hello) as url:
        blocked = bash(f"{FETCH} {url}", ctx=ctx)
        assert "hello from the host" not in blocked.content
        assert blocked.details["sandbox_failure"]["kind"] == "network"
        assert "sandbox: {network: true}" in blocked.content and "agent.yaml" in blocked.content
        executor = tools(ctx, f"name: get\ndescription: d\nrisk: read\nsandbox: {{network: true}}\n"
                              f"command: [{sys.executable}, -c, 'import sys, urllib.request; "
                              f"print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())', '{url}']\n")
        assert "hello from the host" in executor.execute("get", {}).content
        assert "hello from the host" in bash(f"{FETCH} {url}", ctx=with_sandbox(ctx, network=True)).content


def test_without_the_network_even_the_loopback_is_its_own(ctx: RuntimeContext) -> None:
    script = (f"{sys.executable} -m http.server --bind 127.0.0.1 8399 >/dev/null 2>&1 & "
              f"for i in $(seq 50); do {FETCH} http://127.0.0.1:8399/ >/dev/null 2>&1 && break; sleep 0.1; done; "
              "echo reached=$?")
    result = bash(script, ctx=ctx)
    assert "reached=0" in result.content  # a server inside is reachable from inside ...
    assert gone("http.server --bind 127.0.0.1 8399")  # ... and is gone with the call


# -- processes ---------------------------------------------------------------------------------------------

@needs("ps")
def test_a_ps_tool_is_told_it_sees_the_sandboxs_processes_and_the_key_for_the_hosts(ctx: RuntimeContext) -> None:
    marker = f"sleep 300.{os.getpid() % 1000:03d}5"
    host = subprocess.Popen(marker.split())  # a process of the host, which only reads: [/proc] shows
    try:
        executor = tools(ctx, "tools:\n- {name: own, description: d, risk: read, command: [ps, -eo, args]}\n"
                              "- {name: host, description: d, risk: read, command: [ps, -eo, args], "
                              "sandbox: {reads: [/proc]}}\n")
        own = executor.execute("own", {})
        assert marker not in own.content
        assert own.content.endswith("[sandbox: ps sees only the processes of this call's own sandbox, not the host's. "
                                    "To give it that, declare in its tool file (../tools/tools.yaml): sandbox: {reads: [/proc]}]")
        assert own.details["sandbox_failure"]["kind"] == "processes"
        shown = executor.execute("host", {})
        assert marker in shown.content and "[sandbox:" not in shown.content
    finally:
        host.kill()
        host.wait()


@needs("ps")
def test_bash_running_ps_is_told_the_key_of_agent_yaml(ctx: RuntimeContext) -> None:
    result = bash("ps -e | wc -l", ctx=ctx)
    assert result.content.endswith("declare in agent.yaml (or your user config): sandbox: {reads: [/proc]}]"), \
        result.content
    assert "[sandbox:" not in bash("ps -e | wc -l", ctx=with_sandbox(ctx, reads=("/proc",))).content


def test_kill_of_a_host_process_is_told_only_mode_off_reaches_it(ctx: RuntimeContext) -> None:
    host = subprocess.Popen(["sleep", f"300.{os.getpid() % 1000:03d}6"])
    try:
        executor = tools(ctx, f"name: stop\ndescription: d\nsandbox: {{reads: [/proc]}}\ncommand: [kill, '{host.pid}']\n")
        result = executor.execute("stop", {})
        assert host.poll() is None  # alive: the sandbox's pids are its own, /proc shown or not
        assert result.content.endswith("only sandbox: {mode: off} in agent.yaml (or your user config) runs tools as "
                                       "they are (every one)]"), result.content
        assert result.details["sandbox_failure"]["key"] == "sandbox: {mode: off}"
    finally:
        host.kill()
        host.wait()


KUBECTL = """#!/bin/sh
# kubectl as it behaves in the sandbox: without its kubeconfig it tries localhost:8080; with one, its cluster.
if [ -s "$HOME/.kube/config" ]; then
  echo 'Unable to connect to the server: dial tcp 10.0.0.1:6443: connect: network is unreachable' >&2
else
  echo 'E1206 memcache.go:265] couldn'"'"'t get current server API group list: Get "http://localhost:8080/api": dial tcp [::1]:8080: connect: connection refused' >&2
  echo 'The connection to the server localhost:8080 was refused - did you specify the right host or port?' >&2
fi
exit 1
"""


def test_a_refused_connection_of_kubectl_names_the_network_and_its_hidden_kubeconfig(
        ctx: RuntimeContext, temp_home: Path) -> None:
    (temp_home / ".kube").mkdir()
    (temp_home / ".kube" / "config").write_text("apiVersion: v1\n")
    stub = ctx.workspace.parent / "bin" / "kubectl"
    stub.parent.mkdir()
    stub.write_text(KUBECTL)
    stub.chmod(0o755)
    ctx = replace(ctx, host_env={**ctx.host_env, "PATH": f"{stub.parent}{os.pathsep}{ctx.host_env['PATH']}"})
    executor = tools(ctx, "tools:\n- {name: pods, description: d, risk: read, command: [kubectl, get, pods]}\n"
                          "- {name: declared, description: d, risk: read, command: [kubectl, get, pods], "
                          "sandbox: {network: true, reads: [~/.kube]}}\n")
    refused = executor.execute("pods", {})
    assert "The connection to the server localhost:8080 was refused" in refused.content  # no kubeconfig: hidden
    assert refused.content.endswith("declare in its tool file (../tools/tools.yaml): sandbox: {network: true, reads: [~/.kube]}]")
    assert "kubectl needs the network" in refused.content and "from ~/.kube, hidden from tools" in refused.content
    declared = executor.execute("declared", {})
    assert "network is unreachable" in declared.content  # it read its kubeconfig ...
    assert "[sandbox:" not in declared.content  # ... and had the network: nothing the sandbox did


def test_a_missing_configuration_names_the_hidden_folder_only_where_there_is_one(
        ctx: RuntimeContext, temp_home: Path) -> None:
    stub = ctx.workspace.parent / "bin" / "aws"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho 'Unable to locate credentials. You can configure credentials by running "
                    "\"aws configure\".' >&2\nexit 253\n")
    stub.chmod(0o755)
    ctx = replace(ctx, host_env={**ctx.host_env, "PATH": f"{stub.parent}{os.pathsep}{ctx.host_env['PATH']}"})
    executor = tools(ctx, "name: buckets\ndescription: d\nrisk: read\ncommand: [aws, s3, ls]\n")
    assert "[sandbox:" not in executor.execute("buckets", {}).content  # no ~/.aws here: not the sandbox's doing
    (temp_home / ".aws").mkdir()
    hidden = executor.execute("buckets", {})
    assert hidden.content.endswith("sandbox: {network: true, reads: [~/.aws]}]")
    assert hidden.details["sandbox_failure"]["kind"] == "config"
    assert hidden.details["sandbox_failure"]["path"] == "~/.aws"


@needs("curl")
def test_a_refused_connection_of_curl_gets_the_hint(ctx: RuntimeContext) -> None:
    with serving(Hello) as url:
        executor = tools(ctx, f"name: get\ndescription: d\nrisk: read\ncommand: [curl, -sS, '{url}']\n")
        result = executor.execute("get", {})
    assert "hello from the host" not in result.content
    assert result.content.endswith("To give it that, declare in its tool file (../tools/tools.yaml): sandbox: {network: true}]")
    assert result.details["sandbox_failure"]["kind"] == "network"


def daemon(marker: str) -> str:
    """A command line leaving ``sleep marker`` behind in a session of its own, returning only once it runs.
    It waits for the command line to be exactly that (setsid has made the session and run sleep): the
    forked shell's own command line, this script, holds the words too, and a call ending before the
    setsid killed it with its process group (so the daemon never escaped, on a busy machine)."""
    return (f"setsid sleep {marker} >/dev/null 2>&1 < /dev/null & p=$!; "
            f"until [ \"$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)\" = 'sleep {marker} ' ]; do sleep 0.01; done; "
            "echo started")


def test_a_setsid_daemon_does_not_outlive_its_call(ctx: RuntimeContext) -> None:
    marker = f"300.{os.getpid() % 1000:03d}1"
    result = bash(daemon(marker), ctx=ctx)
    assert result.ok and "started" in result.content
    assert gone(f"sleep {marker}")


def test_unsandboxed_the_setsid_daemon_would_have_escaped(ctx: RuntimeContext) -> None:
    """The test above can fail: without the sandbox, the same call leaves its daemon behind."""
    marker = f"300.{os.getpid() % 1000:03d}2"
    assert "started" in bash(daemon(marker), ctx=with_sandbox(ctx, mode="off")).content
    left = running(f"sleep {marker}")
    try:
        assert left, "mode off should run it as it is"
    finally:
        kill(left)


def test_a_timeout_and_a_cancel_end_the_whole_sandbox(ctx: RuntimeContext) -> None:
    marker = f"60.{os.getpid() % 1000:03d}3"
    short = replace(ctx, settings=replace(ctx.settings, bash_timeout=1))
    result = bash(f"sleep {marker}", ctx=short)
    assert result.details["timed_out"] and gone(f"sleep {marker}")
    call = ctx.for_call()
    threading.Timer(0.5, call.cancel.set).start()
    result = bash(f"sleep {marker}4", ctx=call)
    assert result.details["interrupted"] and gone(f"sleep {marker}4")


def test_stdin_and_the_environment_reach_the_sandboxed_process(ctx: RuntimeContext) -> None:
    executor = tools(ctx, "name: up\ndescription: d\nrisk: read\nstdin: '{text}'\nenv: {GREETING: hi}\n"
                          "parameters: {type: object, properties: {text: {type: string}}, required: [text]}\n"
                          "script: echo \"$GREETING $(tr a-z A-Z)\"\n")
    assert executor.execute("up", {"text": "abc"}).content == "hi ABC"


# -- modes -------------------------------------------------------------------------------------------------

def test_mode_required_without_bwrap_refuses_and_runs_nothing(ctx: RuntimeContext, tmp_path: Path) -> None:
    empty = tmp_path / "no-bwrap"
    empty.mkdir()
    host = {**ctx.host_env, "PATH": str(empty)}
    required = replace(ctx, host_env=host, sandbox=SandboxSettings(mode="required"))
    result = bash("touch ran", ctx=required)
    assert not result.ok and not (ctx.workspace / "ran").exists()
    assert "not run: the sandbox is required (sandbox.mode: required)" in result.content
    assert "bubblewrap (bwrap) is not installed" in result.content


def test_mode_auto_without_bwrap_runs_unsandboxed(ctx: RuntimeContext, tmp_path: Path) -> None:
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    for program in ("bash", "touch"):
        (folder / program).symlink_to(os.path.realpath(f"/bin/{program}"))
    auto = replace(ctx, host_env={**ctx.host_env, "PATH": str(folder)})
    outside = tmp_path / "outside-the-workspace"
    result = bash(f"touch {outside}", ctx=auto)
    assert result.ok and outside.exists()


def test_an_entry_point_runs_in_a_sandboxed_child(ctx: RuntimeContext, temp_home: Path) -> None:
    (temp_home / ".ssh").mkdir()
    (temp_home / ".ssh" / "id_rsa").write_text("KEY")
    folder = ctx.workspace.parent / "tools"
    folder.mkdir(exist_ok=True)
    (folder / "probe_mod.py").write_text(
        "import os\nfrom pathlib import Path\n\n"
        "def probe(ctx):\n"
        "    seen = os.path.exists(os.path.expanduser('~/.ssh/id_rsa'))\n"
        "    try:\n        Path('/var/tmp/nami-entry-%d' % os.getpid()).write_text('x')\n        wrote = True\n"
        "    except OSError as exc:\n        wrote = exc.strerror\n"
        "    (ctx.workspace / 'done').write_text('yes')\n"
        "    return {'ssh': seen, 'outside': wrote, 'pid1': Path('/proc/1/cmdline').read_bytes()[:20].decode()}\n")
    executor = tools(ctx, "name: probe\ndescription: d\nentrypoint: probe_mod:probe\n")
    result = executor.execute("probe", {})
    assert result.ok, result.content
    assert '"ssh": false' in result.content and "Read-only file system" in result.content
    assert (ctx.workspace / "done").read_text() == "yes"


def test_an_entry_points_child_imports_only_what_trust_approved(ctx: RuntimeContext) -> None:
    folder = ctx.workspace.parent / "tools"
    folder.mkdir(exist_ok=True)
    (folder / "trusted_mod.py").write_text("def run():\n    return 'trusted code'\n")
    (folder / "other_mod.py").write_text("def run():\n    return 'never reviewed'\n")
    refused = {str(folder / "other_mod.py"): "other_mod.py is not covered by trust"}
    checked = replace(ctx, code_check=lambda file: refused.get(str(file)))
    executor = tools(checked, "tools:\n  - {name: ok, description: d, entrypoint: 'trusted_mod:run'}\n"
                              "  - {name: other, description: d, entrypoint: 'other_mod:run'}\n")
    assert executor.execute("ok", {}).content == "trusted code"
    denied = executor.execute("other", {})
    assert not denied.ok and "other_mod.py is not covered by trust" in denied.content
    (folder / "trusted_mod.py").write_text("def run():\n    return 'changed after trust'\n")
    changed = executor.execute("ok", {})
    assert not changed.ok and "changed since it was trusted" in changed.content


def test_the_dry_run_shows_the_sandbox(ctx: RuntimeContext) -> None:
    executor = tools(ctx, "name: web\ndescription: d\nrisk: read\ncommand: [curl, https://example.com]\n"
                          "sandbox: {network: true}\n")
    prepared = executor.prepare("web", {})
    assert isinstance(prepared, PreparedToolCall)
    shown = prepared.plan()["sandbox"]
    assert (shown["mode"], shown["network"]) == ("workspace-write", True)
    from nami_yaml.cli.tools import format_plan

    assert "sandbox: workspace-write, network on" in format_plan(prepared)


def test_a_writable_folder_under_tmp_named_on_a_command_line_stays_writable(ctx: RuntimeContext, tmp_path: Path) -> None:
    """An MCP server's command line names its files (shown read-only under the private /tmp); a folder
    that is also writable keeps its write."""
    import subprocess

    from nami_yaml.runners.sandbox.bwrap import close_all, wrap
    from nami_yaml.runners.sandbox.plan import KIND_SERVER, named_paths, plan_for
    from nami_yaml.sandbox_settings import SandboxNeeds

    out = tmp_path / "out"
    out.mkdir()
    (out / "log").write_text("")
    argv = ["/bin/sh", "-c", f"echo more >> {out / 'log'}", str(out / "log")]
    plan = plan_for(ctx, SandboxNeeds(writable=(str(out),)), kind=KIND_SERVER, visible=named_paths(argv))
    command, keep = wrap(plan, argv, ctx.workspace)
    try:
        done = subprocess.run(command, cwd=ctx.workspace, capture_output=True, text=True, timeout=30, pass_fds=keep)
    finally:
        close_all(keep)
    assert done.returncode == 0, done.stderr
    assert (out / "log").read_text() == "more\n"


def test_a_path_folder_under_home_runs_with_its_installation(ctx: RuntimeContext, temp_home: Path) -> None:
    """The folders of the PATH that lie under home are shown read-only, with the installation a bin or shims
    folder belongs to (pyenv's shims run its versions): nothing else of home."""
    tool = temp_home / ".tool"
    (tool / "bin").mkdir(parents=True)
    (tool / "versions").mkdir()
    (tool / "versions" / "data").write_text("FROM THE INSTALLATION\n")
    (tool / "bin" / "hello").write_text(f"#!/bin/sh\ncat {tool}/versions/data\n")
    (tool / "bin" / "hello").chmod(0o755)
    (temp_home / "private.txt").write_text("PRIVATE\n")
    (tool / "credentials.json").write_text("TOOL-TOKEN\n")  # beside bin/, as ~/.pulumi keeps its token
    on_path = replace(ctx, host_env={**ctx.host_env, "PATH": f"{tool / 'bin'}:{ctx.host_env.get('PATH', '')}"})
    result = bash(f"hello; cat ~/private.txt {tool}/credentials.json", ctx=on_path)
    assert "FROM THE INSTALLATION" in result.content and "PRIVATE" not in result.content
    assert "TOOL-TOKEN" not in result.content  # of the installation only what runs: not the folder whole
    # Shown read-only: a call cannot add a program there for the calls after it.
    assert "Read-only file system" in bash(f"echo x > {tool}/bin/other", ctx=on_path).content


def test_a_call_sees_what_its_targets_environment_names(ctx: RuntimeContext, temp_home: Path) -> None:
    from nami_yaml.runtime import Target

    (temp_home / ".kube").mkdir()
    (temp_home / ".kube" / "prod").write_text("PROD-CONFIG\n")
    (temp_home / ".kube" / "staging").write_text("STAGING-CONFIG\n")
    prod = Target("prod", env={"KUBECONFIG": str(temp_home / ".kube" / "prod")})
    result = bash("cat ~/.kube/prod ~/.kube/staging", ctx=replace(ctx, target=prod))
    assert "PROD-CONFIG" in result.content and "STAGING-CONFIG" not in result.content
    assert "PROD-CONFIG" not in bash("cat ~/.kube/prod", ctx=ctx).content  # on no target: hidden


def test_a_workspace_that_is_the_home_folder_is_shown_whole_but_its_credentials(temp_home: Path) -> None:
    from nami_yaml.runners.sandbox.plan import BASH_BUILTIN, builtin_plan

    (temp_home / ".ssh").mkdir()
    (temp_home / ".ssh" / "id_ed25519").write_text("SSH-SECRET\n")
    (temp_home / "notes.txt").write_text("NOTES\n")
    ctx = RuntimeContext(workspace=temp_home, spill_dir=temp_home / ".local" / "state" / "nami" / "output")
    plan = builtin_plan(BASH_BUILTIN, ctx)
    assert plan is not None and plan.empty == ()  # emptying it would take the workspace away
    result = bash("cat notes.txt .ssh/id_ed25519", ctx=ctx)
    assert "NOTES" in result.content and "SSH-SECRET" not in result.content


def test_a_process_left_behind_in_the_sandbox_ends_with_the_call(ctx: RuntimeContext,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """No list of the machine's processes is read after a sandboxed call: its pid namespace ends with it."""
    listed: list[int] = []
    monkeypatch.setattr(process_module, "processes", lambda: listed.append(1))
    marker = f"sleep 308.{os.getpid() % 1000:03d}1"
    executor = tools(ctx, "tools:\n- {name: bg, description: d, risk: read, "
                          f"script: '{marker} >/dev/null 2>&1 & echo started'}}\n")
    try:
        result = executor.execute("bg", {})
        assert result.content.strip() == "started"
        assert gone(marker)
        assert listed == []
    finally:
        kill(running(marker))
