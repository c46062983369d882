"""The sandbox's pieces that need no bwrap to check: bwrap's argv from a plan, what a failure names, how
a plan is shown, and the notice and escalation words. (tests/runners/test_sandbox.py runs the real bwrap.)"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from nami_yaml.runners.sandbox.bwrap import bwrap_argv
from nami_yaml.runners.sandbox.describe import describe, sandbox_line, summary
from nami_yaml.runners.sandbox.failure import classify_failure
from nami_yaml.runners.sandbox.notice import escalation, notice_for
from nami_yaml.runners.sandbox.plan import KIND_BASH, KIND_NAMI, KIND_TOOL, SandboxPlan
from nami_yaml.runners.sandbox.probe import Availability
from nami_yaml.sandbox_settings import SandboxSettings, expand_paths

HOME = Path("/home/u")
WORKSPACE = HOME / "proj"


def plan(**fields: object) -> SandboxPlan:
    base = SandboxPlan(mode="workspace-write", workspace=WORKSPACE, network=False, home=HOME,
                       runner=("/usr/bin/bwrap", "--unshare-user"), kind=KIND_TOOL, origin="tools/x.yaml")
    return replace(base, **fields)  # type: ignore[arg-type]


@dataclass
class Finished:
    exit_code: int | None
    stderr: str


def mounts(argv: list[str]) -> list[tuple[str, str]]:
    """(option, destination) of every mount, in order."""
    found = []
    for index, word in enumerate(argv):
        if word in ("--bind", "--ro-bind"):
            found.append((word, argv[index + 2]))
        elif word in ("--tmpfs", "--remount-ro", "--proc", "--dev"):
            found.append((word, argv[index + 1]))
        elif word == "--ro-bind-data":
            found.append((word, argv[index + 2]))
    return found


# -- the argv ----------------------------------------------------------------------------------------------

def test_the_argv_mounts_from_the_outermost_path_in(tmp_path: Path) -> None:
    kube = tmp_path / ".kube"
    (kube / "cache").mkdir(parents=True)
    (kube / "config").write_text("x")
    netrc = tmp_path / ".netrc"
    netrc.write_text("secret")
    shown = plan(workspace=tmp_path / "ws", hidden=(kube, netrc), reads=(kube / "config",),
                 writable=(kube / "cache",), read_only=(tmp_path / "ws" / ".git" / "config",))
    argv = bwrap_argv(shown, ["true"], tmp_path / "ws", [7])
    order = mounts(argv)
    assert argv[:2] == ["/usr/bin/bwrap", "--unshare-user"] and "--unshare-net" in argv
    assert order[:4] == [("--ro-bind", "/"), ("--dev", "/dev"), ("--proc", "/proc"), ("--tmpfs", "/tmp")]
    position = {mount: index for index, mount in enumerate(order)}
    assert position[("--tmpfs", str(kube))] < position[("--ro-bind", str(kube / "config"))]
    assert position[("--tmpfs", str(kube))] < position[("--bind", str(kube / "cache"))]
    assert position[("--bind", str(tmp_path / "ws"))] < position[("--ro-bind", str(tmp_path / "ws" / ".git" / "config"))]
    assert ("--ro-bind-data", str(netrc)) in order and argv[argv.index("--ro-bind-data") + 1] == "7"
    assert order[-1] == ("--remount-ro", str(kube))  # made read-only once what is inside is mounted
    assert argv[-4:] == ["--chdir", str(tmp_path / "ws"), "--", "true"]


def test_an_emptied_home_is_mounted_first_and_masks_last(tmp_path: Path) -> None:
    """The home folder: an empty tmpfs before what is shown in it, read-only at the end; a credential inside
    nothing shown is not mounted at all (it is not there), one inside a shown folder is; a denied
    program's file is the very last mount, over anything that would show it."""
    home = tmp_path / "home"
    for folder in (".ssh", ".cargo/bin", "ws"):
        (home / folder).mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("secret")
    program = tmp_path / "bin" / "rm"
    program.parent.mkdir()
    program.write_text("")
    shown = plan(workspace=home / "ws", empty=(home,), visible=(home / ".cargo",),
                 hidden=(home / ".ssh", home / ".cargo" / "credentials.toml"), masked=(program,))
    argv = bwrap_argv(shown, ["true"], home / "ws", [7, 8])
    order = mounts(argv)
    position = {mount: index for index, mount in enumerate(order)}
    assert position[("--tmpfs", str(home))] < position[("--ro-bind", str(home / ".cargo"))]
    assert position[("--tmpfs", str(home))] < position[("--bind", str(home / "ws"))]
    assert ("--ro-bind-data", str(home / ".cargo" / "credentials.toml")) in order
    assert ("--tmpfs", str(home / ".ssh")) not in order  # in the empty home already: nothing to hide
    assert order[-2:] == [("--ro-bind-data", str(program)), ("--remount-ro", str(home))]
    assert describe(shown)["home"] == "hidden" and describe(shown)["masked"] == [str(program)]


def test_the_network_host_processes_and_read_only_mode_change_the_argv(tmp_path: Path) -> None:
    argv = bwrap_argv(plan(workspace=tmp_path, network=True, host_proc=True, mode="read-only"), ["true"], tmp_path, [])
    assert "--unshare-net" not in argv
    assert ("--ro-bind", "/proc") in mounts(argv) and ("--proc", "/proc") not in mounts(argv)
    assert ("--ro-bind", str(tmp_path)) in mounts(argv) and ("--bind", str(tmp_path)) not in mounts(argv)


def test_an_approved_write_is_mounted_alone(tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.txt"
    report.parent.mkdir()
    report.write_text("")
    hook = tmp_path / "ws" / ".git" / "hooks" / "pre-commit"
    allowed = plan(workspace=tmp_path / "ws", read_only=(hook,)).allowing_writes([report, hook])
    assert allowed.call_writes == (report,) and allowed.read_only == ()
    assert ("--bind", str(report)) in mounts(bwrap_argv(allowed, ["true"], tmp_path, []))
    assert ("--bind", str(report.parent)) not in mounts(bwrap_argv(allowed, ["true"], tmp_path, []))


# -- failures ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "path"), [
    ("/usr/bin/bash: line 1: /var/tmp/x: Read-only file system", "/var/tmp/x"),
    ("touch: cannot touch '/home/u/notes': Read-only file system", "~/notes"),
    ("mkdir: cannot create directory ‘/opt/y’: Read-only file system", "/opt/y"),
    ("OSError: [Errno 30] Read-only file system: '/etc/z'", "/etc/z"),
])
def test_a_refused_write_names_the_path_and_the_key(line: str, path: str) -> None:
    found = classify_failure(plan(), Finished(1, line))
    assert found is not None and found.kind == "write" and found.path == path
    assert found.key == f"sandbox: {{writable: [{path}]}}" and found.where == "its tool file (tools/x.yaml)"
    assert found.note.startswith(f"[sandbox: writing {path} was refused")


def test_only_failures_the_sandbox_can_cause_are_named() -> None:
    assert classify_failure(plan(), Finished(1, "bash: line 1: inside.txt: Read-only file system")) is None
    assert classify_failure(plan(network=True), Finished(7, "curl: (6) Could not resolve host: x")) is None
    assert classify_failure(plan(), Finished(0, "warning: Connection refused, retrying; done")) is None
    assert classify_failure(plan(), Finished(1, "error: could not find file /home/u/proj/x.c")) is None
    assert classify_failure(plan(mode="off"), Finished(1, "touch: cannot touch '/x': Read-only file system")) is None
    assert classify_failure(plan(kind=KIND_NAMI), Finished(1, "touch: cannot touch '/x': Read-only file system")) is None
    assert classify_failure(None, Finished(1, "touch: cannot touch '/x': Read-only file system")) is None


def test_network_hidden_and_protected_failures() -> None:
    network = classify_failure(plan(kind=KIND_BASH), Finished(7, "curl: (7) Failed to connect to 127.0.0.1 port 80"))
    assert network is not None and network.key == "sandbox: {network: true}"
    assert network.where == "agent.yaml (or your user config)" and "without even the host's 127.0.0.1" in network.note
    hidden = classify_failure(plan(hidden=(HOME / ".kube",)), Finished(1, "cat: /home/u/.kube/config: No such file"))
    assert hidden is not None and hidden.key == "sandbox: {reads: [~/.kube/config]}"
    socket = classify_failure(plan(), Finished(1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock."))
    assert socket is not None and socket.key == "sandbox: {reads: [/var/run/docker.sock]}"
    guarded = plan(read_only=(WORKSPACE / ".git" / "config",))
    kept = classify_failure(guarded, Finished(1, "/usr/bin/bash: line 1: .git/config: Read-only file system"))
    assert kept is not None and "nami keeps ~/proj/.git/config read-only" in kept.note
    sealed = plan(sealed=(HOME / ".local/state/nami",), hidden=(HOME / ".local/state/nami",))
    own = classify_failure(sealed, Finished(1, "cat: /home/u/.local/state/nami/trust.json: No such file"))
    assert own is not None and own.key == "" and "nami's own folders" in own.note
    read_only = classify_failure(plan(mode="read-only"), Finished(1, "bash: line 1: a.txt: Read-only file system"))
    assert read_only is not None and "sandbox.mode: read-only" in read_only.note


# -- how a plan is shown -----------------------------------------------------------------------------------

def test_describe_and_summary() -> None:
    shown = plan(writable=(HOME / ".cache/go",), reads=(HOME / ".kube/config",), hidden=(HOME / ".ssh",))
    assert describe(shown, HOME) == {"mode": "workspace-write", "network": False, "workspace": "~/proj",
                                     "writable": ["~/.cache/go"], "reads": ["~/.kube/config"], "hidden": 1}
    assert summary(shown, HOME) == "sandbox: workspace-write, network off; also writes ~/.cache/go; reads hidden ~/.kube/config"
    off = plan(mode="off", reason="sandbox.mode is off")
    assert summary(off) == "sandbox: off (sandbox.mode is off)"
    refused = plan(refusal="not run: the sandbox is required")
    assert describe(refused)["mode"] == "refused"
    assert sandbox_line({"argv": ["x"]}) is None


# -- notice, escalation, paths -------------------------------------------------------------------------------

def test_the_notice_of_a_run_without_the_sandbox() -> None:
    missing = Availability(False, "bubblewrap (bwrap) is not installed", "install it: `sudo apt install bubblewrap`")
    assert notice_for(SandboxSettings(), Availability(True)) is None
    assert notice_for(SandboxSettings(mode="off"), missing) is None
    auto = notice_for(SandboxSettings(), missing)
    assert auto is not None and "run without a sandbox here" in auto and "sudo apt install bubblewrap" in auto
    required = notice_for(SandboxSettings(mode="required"), missing)
    assert required is not None and "will not run" in required


def test_escalation_is_offered_only_to_a_person_for_a_sandbox_failure() -> None:
    details = {"sandbox_failure": {"kind": "network", "path": None, "key": "sandbox: {network: true}",
                                   "where": "its tool file (tools/x.yaml)"}}
    offer = escalation(plan(), details, person_present=True)
    assert offer is not None and "WITHOUT the sandbox" in offer.question and "sandbox: {network: true}" in offer.question
    assert escalation(plan(), details, person_present=False) is None
    assert escalation(plan(), details, person_present=True, denied=True) is None
    assert escalation(plan(escalate="never"), details, person_present=True) is None
    assert escalation(plan(), {}, person_present=True) is None


def test_paths_expand_with_the_host_environment(tmp_path: Path) -> None:
    env = {"HOME": "/home/u", "KUBECONFIG": "/a/one:/b/two", "EMPTY": ""}
    assert expand_paths(["~/.kube", "$KUBECONFIG", "${UNSET}/x", "rel/path", "$EMPTY"], env, tmp_path) == [
        Path("/home/u/.kube"), Path("/a/one"), Path("/b/two"), tmp_path / "rel/path"]


# -- programs known to need more (runners/sandbox/known_programs.py) -----------------------------------------

@dataclass
class Ran:
    exit_code: int | None
    stderr: str
    stdout: str = ""


def test_a_known_program_s_symptom_names_all_it_lacks() -> None:
    kube = plan(hidden=(HOME / ".kube",))
    refused = Ran(1, "The connection to the server localhost:8080 was refused - did you specify the right host or port?")
    found = classify_failure(kube, refused, ["kubectl", "get", "pods"])
    assert found is not None and found.key == "sandbox: {network: true, reads: [~/.kube]}"
    assert classify_failure(kube, refused, ["/usr/local/bin/kubectl", "get", "pods"]) == found
    # What the sandbox gives already is not asked for; where ~/.kube is not hidden (none here), nor is it.
    shown = classify_failure(replace(kube, reads=(HOME / ".kube",)), refused, ["kubectl", "get", "pods"])
    assert shown is not None and shown.key == "sandbox: {network: true}"
    assert classify_failure(plan(), refused, ["kubectl", "get", "pods"]).key == "sandbox: {network: true}"  # type: ignore[union-attr]
    assert classify_failure(replace(kube, network=True, reads=(HOME / ".kube",)), refused, ["kubectl"]) is None
    credentials = Ran(253, "Unable to locate credentials. You can configure credentials by running \"aws configure\".")
    aws = classify_failure(plan(hidden=(HOME / ".aws",)), credentials, ["aws", "s3", "ls"])
    assert aws is not None and aws.kind == "config" and aws.path == "~/.aws"
    assert classify_failure(plan(), credentials, ["aws", "s3", "ls"]) is None  # no ~/.aws on this machine


def test_a_process_list_of_the_sandbox_s_own_processes() -> None:
    own = Ran(0, "", "    PID CMD\n      1 bwrap --unshare-pid\n      2 ps -e\n")
    found = classify_failure(plan(), own, ["ps", "-e"])
    assert found is not None and found.kind == "processes" and found.key == "sandbox: {reads: [/proc]}"
    assert classify_failure(plan(host_proc=True), own, ["ps", "-e"]) is None
    assert classify_failure(plan(), own, ["cat", "list.txt"]) is None  # not a process list
    lines = "".join(f"{pid} worker\n" for pid in range(40))
    assert classify_failure(plan(), Ran(0, "", lines), ["ps", "-e"]) is None  # a host's list: the sandbox's is short
    piped = classify_failure(plan(kind=KIND_BASH), Ran(1, ""), ["bash", "-c", "--", "ps aux | grep -q nginx"])
    assert piped is not None and piped.where == "agent.yaml (or your user config)"
    killed = classify_failure(plan(host_proc=True), Ran(1, "kill: (4242): No such process"), ["kill", "4242"])
    assert killed is not None and killed.key == "sandbox: {mode: off}" and "cannot signal" in killed.note


def test_git_needs_the_network_only_to_reach_a_remote() -> None:
    unreachable = Ran(128, "fatal: unable to access 'https://x/': Could not resolve host: x")
    assert classify_failure(plan(), unreachable, ["git", "fetch", "origin"]).key == "sandbox: {network: true}"  # type: ignore[union-attr]
    assert "git needs the network" in classify_failure(plan(), unreachable, ["git", "fetch"]).note  # type: ignore[union-attr]
    generic = classify_failure(plan(), unreachable, ["git", "status"])  # the older, generic network hint
    assert generic is not None and "git needs" not in generic.note
