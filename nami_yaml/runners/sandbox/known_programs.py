"""What some programs need that the sandbox does not give a call unless it declares it: the host's
processes (``reads: [/proc]``), the network (``network: true``), a configuration folder it hides
(``reads: [~/.kube]``); or signals to the host's processes, which no key of a tool allows (the call's pid
namespace stays its own where ``reads: [/proc]`` shows the host's: only ``sandbox.mode: off`` does).

One table, read twice: ``nami check`` warns about a tool that plainly runs such a program without declaring
what it needs (registry/sandbox_checks.py), and a result that looks shaped by the sandbox ends with a hint
naming the key (failure.py).

Heuristics, conservative: a program is known by its name (``/usr/bin/ps`` is ``ps``), and git and
terraform only with the subcommands that reach the network. The messages that betray a missing network or
configuration are in :data:`SYMPTOMS`, matched only where the program's needs are not granted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PROC = "/proc"  # ``reads: [/proc]``: the host's processes instead of the call's own (plan.py)


@dataclass(frozen=True)
class ProgramNeeds:
    """``processes``: the host's processes; ``network``: the host's network; ``reads``: hidden paths it
    reads its configuration from, each a group of alternatives (any one declared will do; the first is
    the one suggested); ``only``: the needs hold only with one of these subcommands (its first operand);
    ``signals``: it signals processes of the host, which no key of a tool allows."""

    processes: bool = False
    signals: bool = False
    network: bool = False
    reads: tuple[tuple[str, ...], ...] = ()
    only: frozenset[str] = frozenset()


_PROCESSES = ProgramNeeds(processes=True)
_CLUSTER = ProgramNeeds(network=True, reads=(("~/.kube", "~/.kube/config", "$KUBECONFIG"),))

# The one table: a program's name -> what it needs beyond the sandbox's defaults.
PROGRAMS: dict[str, ProgramNeeds] = {
    **dict.fromkeys(("ps", "top", "htop", "btop", "atop", "pgrep", "pidof", "pstree", "lsof", "fuser", "pmap",
                     "pwdx"), _PROCESSES),
    **dict.fromkeys(("kill", "pkill", "killall"), ProgramNeeds(signals=True)),
    "kubectl": _CLUSTER, "helm": _CLUSTER, "k9s": _CLUSTER,
    **dict.fromkeys(("curl", "wget", "http", "https", "ping", "dig", "nslookup", "host"), ProgramNeeds(network=True)),
    **dict.fromkeys(("ssh", "scp", "sftp"), ProgramNeeds(network=True, reads=(("~/.ssh",),))),
    "aws": ProgramNeeds(network=True, reads=(("~/.aws",),)),
    **dict.fromkeys(("gcloud", "gsutil", "bq"), ProgramNeeds(network=True, reads=(("~/.config/gcloud",),))),
    "az": ProgramNeeds(network=True, reads=(("~/.azure",),)),
    "gh": ProgramNeeds(network=True, reads=(("~/.config/gh",),)),
    # The engine does the network; the client needs its socket (under /run, private in the sandbox). Its
    # registry logins (~/.docker/config.json, hidden) only for a private registry: not asked for.
    "docker": ProgramNeeds(reads=(("/var/run/docker.sock", "/run/docker.sock", "$XDG_RUNTIME_DIR/docker.sock"),)),
    "git": ProgramNeeds(network=True, only=frozenset({"fetch", "pull", "push", "clone", "ls-remote"})),
    "terraform": ProgramNeeds(network=True, only=frozenset({"init", "plan", "apply", "destroy", "refresh",
                                                            "import"})),
}

# What a program prints when the sandbox kept from it what it needs, by the need concerned.
SYMPTOMS: dict[str, re.Pattern[str]] = {
    "network": re.compile(
        r"Network is unreachable|Could not resolve host|Could not resolve hostname|Temporary failure in name "
        r"resolution|Name or service not known|No address associated with hostname|nodename nor servname|"
        r"getaddrinfo|\bENETUNREACH\b|\bEAI_AGAIN\b|dial tcp|no such host|Connection refused|\bECONNREFUSED\b|"
        r"Couldn't connect to server|Failed to connect to|\[Errno 101\]|\[Errno 111\]|\[Errno -[23]\]|"
        r"connection to the server \S+ was refused|Kubernetes cluster unreachable",
        re.IGNORECASE),
    "config": re.compile(
        r"no configuration has been provided|Missing or incomplete configuration info|Unable to locate "
        r"credentials|could not find (?:a |the )?(?:kube)?config|You do not currently have an active account|"
        r"Please run 'az login'|connection to the server localhost:8080 was refused|Kubernetes cluster unreachable",
        re.IGNORECASE),
    # "No such process": a pid of the host, which the call's own pid namespace does not hold.
    "processes": re.compile(r"No such process|\bESRCH\b|no process found", re.IGNORECASE),
}
# Of those needing the host's processes, the ones whose output is a list of processes: a short list is a
# symptom. The others show it by "No such process", like the programs that signal (kill; pkill fails silently).
PROCESS_LISTS = frozenset({"ps", "top", "htop", "btop", "atop", "pgrep", "pidof", "pstree", "lsof"})
NEAR_EMPTY_LINES = 5  # a process list this short (header included) holds the sandbox's own processes only
OWN_PROCESS = re.compile(r"(?<![\w-])bwrap\b")  # the sandbox's pid 1, listed by ps and top inside it


@dataclass(frozen=True)
class Missing:
    """What ``program`` needs and does not have: the host's processes, the network, hidden paths."""

    program: str
    processes: bool = False
    network: bool = False
    reads: tuple[str, ...] = ()
    signals: bool = False

    def __bool__(self) -> bool:
        return self.keyed or self.signals

    @property
    def keyed(self) -> bool:
        """Whether a tool's ``sandbox:`` keys can give it what is missing."""
        return self.processes or self.network or bool(self.reads)

    def described(self) -> str:
        parts = (["the host's processes"] if self.processes else []) + (["the network"] if self.network else [])
        parts += self.reads
        return _joined(parts)


def needs_of(name: str | None, args: Sequence[str | None] = ()) -> ProgramNeeds | None:
    """What the program ``name`` run with ``args`` needs, or None when the table does not know it."""
    if not name:
        return None
    found = PROGRAMS.get(os.path.basename(name))
    if found is None or not found.only:
        return found
    operand = next((a for a in args if a is None or not a.startswith("-")), None)
    return found if operand in found.only else None


def missing(name: str | None, args: Sequence[str | None], *, processes: bool, network: bool,
            reads: Iterable[str]) -> Missing:
    """What the program needs that a sandbox granting ``processes``, ``network`` and ``reads`` (paths as
    written or expanded) does not give; a path declared inside or around a needed one counts as given."""
    needs = needs_of(name, args)
    program = os.path.basename(name or "")
    if needs is None:
        return Missing(program)
    declared = [_normal(p) for p in reads]
    absent = tuple(group[0] for group in needs.reads
                   if not any(_overlap(_normal(alternative), path) for alternative in group for path in declared))
    return Missing(program, processes=needs.processes and not processes, network=needs.network and not network,
                   reads=absent, signals=needs.signals)


def programs_in(argv: Sequence[str]) -> list[tuple[str | None, tuple[str | None, ...]]]:
    """The programs an argv runs, each with its arguments: itself, or for ``bash -c SCRIPT`` (a script
    tool, a bash call) the simple commands the script holds, as far as the parser reads them (None: a word
    only known when it runs)."""
    if not argv:
        return []
    if os.path.basename(argv[0]) in ("bash", "sh") and "-c" in argv[1:5]:
        at = argv.index("-c", 1) + 1
        at += 1 if argv[at:at + 1] == ["--"] else 0  # the bash built-in's `bash -c -- LINE`
        if at < len(argv):
            return script_programs(argv[at])
    return [(argv[0], tuple(argv[1:]))]


def script_programs(script: str) -> list[tuple[str | None, tuple[str | None, ...]]]:
    from nami_yaml.shell.bash import analysed

    return [(c.words[0], tuple(c.words[1:])) for c in analysed(script).seen if c.words]


MODE_OFF = "sandbox: {mode: off}"


def signals_note(programs: Sequence[str], where: str) -> str:
    """Why ``programs`` (kill, pkill) cannot reach the host's processes, and the one setting that lets them."""
    return (f"{_joined(programs)} cannot signal the host's processes from the sandbox: a call's processes are its "
            f"own, whatever its tool declares; only {MODE_OFF} in {where} runs tools as they are (every one)")


def yaml_lines(missing_found: Iterable[Missing], declared: dict[str, object] | None = None) -> str:
    """The ``sandbox:`` mapping (flow style) that grants what is missing, merged with ``declared``."""
    found, declared = list(missing_found), declared or {}
    network = bool(declared.get("network")) or any(m.network for m in found)
    reads = [str(p) for p in _listed(declared.get("reads"))]
    for item in found:
        reads += [PROC] if item.processes and PROC not in reads else []
        reads += [p for p in item.reads if p not in reads]
    writable = [str(p) for p in _listed(declared.get("writable"))]
    parts = (["network: true"] if network else []) + ([f"reads: [{', '.join(reads)}]"] if reads else [])
    parts += [f"writable: [{', '.join(writable)}]"] if writable else []
    return "sandbox: {" + ", ".join(parts) + "}"


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _normal(path: str) -> str:
    return os.path.normpath(str(path)).rstrip("/") or "/"


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _joined(parts: Sequence[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else (parts[0] if parts else "")
