"""Whether the sandbox works on this machine, and if not, why and how to get it. Asked once per process
(per bwrap found), by running bubblewrap exactly as a tool call would, on ``true``.

Why the system's ``bwrap`` and nothing else: Landlock (and seccomp) cannot hide a path behind an empty
one, nor give a process a network namespace of its own, and a binary bundled from PyPI would be a setuid
or user-namespace tool nobody's distribution updates. bubblewrap is packaged everywhere, small, and
reviewed by the projects that rely on it (Flatpak, GNOME, Codex's and Claude Code's sandboxes).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Namespaces for every call. With a user namespace of its own (the normal case, and the one that needs no
# privilege) no capability the process holds counts outside it, even for root, and --disable-userns stops
# it from making another one (nested user namespaces are where most kernel bugs are reached from).
USERNS_FLAGS = ("--unshare-user", "--disable-userns")
COMMON_FLAGS = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
                "--new-session", "--cap-drop", "ALL")
_PROBE_TIMEOUT = 10.0

INSTALL = {
    "debian": "sudo apt install bubblewrap",
    "ubuntu": "sudo apt install bubblewrap",
    "fedora": "sudo dnf install bubblewrap",
    "rhel": "sudo dnf install bubblewrap",
    "centos": "sudo dnf install bubblewrap",
    "arch": "sudo pacman -S bubblewrap",
    "opensuse": "sudo zypper install bubblewrap",
    "suse": "sudo zypper install bubblewrap",
    "alpine": "sudo apk add bubblewrap",
}
_ANY_DISTRIBUTION = ("install bubblewrap: `sudo apt install bubblewrap` (Debian, Ubuntu), `sudo dnf install "
                     "bubblewrap` (Fedora), `sudo pacman -S bubblewrap` (Arch)")


@dataclass(frozen=True)
class Availability:
    """``available``: tool processes can be sandboxed here. Otherwise ``reason`` says why (bubblewrap's
    own words where it ran) and ``how`` how to get it."""

    available: bool
    reason: str = ""
    how: str = ""
    bwrap: str | None = None
    version: str = ""
    flags: tuple[str, ...] = ()  # the namespace flags that work here (USERNS_FLAGS may be missing)

    def describe(self) -> str:
        if self.available:
            return f"{self.version or 'bubblewrap'} at {self.bwrap}"
        return f"{self.reason}; {self.how}" if self.how else self.reason


def availability(env: Mapping[str, str] | None = None) -> Availability:
    """Whether the sandbox works for processes started with ``env`` (its PATH finds bwrap)."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        system = "macOS" if sys.platform == "darwin" else sys.platform
        return Availability(False, f"{system} has no bubblewrap, and nami's sandbox is for Linux only so far",
                            "run nami on Linux (or in a Linux VM or container) to have tools sandboxed")
    if _wsl1():
        return Availability(False, "WSL 1 has no Linux namespaces", "use WSL 2 (`wsl --set-version <distro> 2`)")
    found = _bwrap_on(env.get("PATH"))
    if found is None:
        return Availability(False, "bubblewrap (bwrap) is not installed (not on PATH)", install_hint())
    return _probe(found)


@functools.lru_cache(maxsize=8)
def _bwrap_on(path: str | None) -> str | None:
    """The real path of the bwrap ``path`` finds: looked for once per PATH, as the probe runs once per
    bwrap (a stat of every PATH folder at each call was a sixth of planning one)."""
    found = shutil.which("bwrap", path=path)
    return None if found is None else os.path.realpath(found)


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> Availability:
    version = _version(bwrap)
    problem = _try(bwrap, USERNS_FLAGS)
    if problem is None:
        return Availability(True, bwrap=bwrap, version=version, flags=USERNS_FLAGS + COMMON_FLAGS)
    # A setuid bwrap where unprivileged user namespaces are off can still make the other namespaces.
    if _try(bwrap, ()) is None:
        return Availability(True, bwrap=bwrap, version=version, flags=COMMON_FLAGS)
    return Availability(False, f"bubblewrap cannot make its namespaces here: {problem}", _namespace_hint(problem),
                        bwrap=bwrap, version=version)


def _try(bwrap: str, userns: tuple[str, ...]) -> str | None:
    """bwrap's error for a sandbox like a tool's (network off), or None when it ran."""
    argv = [bwrap, *userns, *COMMON_FLAGS, "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT,
                              start_new_session=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else f"exit code {done.returncode}"


def _version(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.decode("utf-8", "replace").strip()


@functools.cache
def _wsl1() -> bool:
    """(The kernel a process runs on does not change while it runs.)"""
    try:
        text = Path("/proc/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "Microsoft" in text and "microsoft-standard" not in text.lower()


def install_hint() -> str:
    """The install command of this distribution (from /etc/os-release), or those of the common ones."""
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return _ANY_DISTRIBUTION
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    ids = [fields.get("ID", "").strip('"')] + fields.get("ID_LIKE", "").strip('"').split()
    for name in ids:
        for known, command in INSTALL.items():
            if name == known or name.startswith(known):
                return f"install it: `{command}`"
    return _ANY_DISTRIBUTION


def _namespace_hint(problem: str) -> str:
    if "uid map" in problem or "Permission denied" in problem:
        return ("unprivileged user namespaces are restricted: on Ubuntu 23.10 and later AppArmor allows them to "
                "bwrap through the profile in the apparmor package (`sudo apt install apparmor-profiles`, or "
                "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`); in a container, run it with "
                "user namespaces allowed (Docker: --security-opt seccomp=unconfined --security-opt "
                "apparmor=unconfined)")
    return ("unprivileged user namespaces look disabled: `sudo sysctl kernel.unprivileged_userns_clone=1` (older "
            "Debian), or raise user.max_user_namespaces; in a container, allow user namespaces")
