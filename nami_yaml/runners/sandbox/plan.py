"""The sandbox of one call: computed in one place (:func:`plan_for`) from what the tool declares and the
project's settings, carried by the ProcessRequest, shown by dry runs and approvals, turned into bwrap's
argv by runners/sandbox/bwrap.py.

What a plan holds, beyond the workspace (read-write, or read-only in ``mode: read-only``):
- ``writable``: more paths the call may write (the settings' ``writable:``, the tool's own);
- ``empty``: the home folder, replaced by an empty read-only one: a call sees of it only what is shown
  in it (below), what it declares; never all of it (see :func:`_home_shown` for what nami itself shows);
- ``hidden``: what the call cannot see even inside what is shown: the credential folders and files
  (:data:`HIDDEN`), the files credential variables name wherever they are (:data:`CREDENTIAL_VARIABLES`),
  ``hide:``, and nami's own state, config, data and cache folders (:func:`nami_folders`), which nothing
  un-hides;
- ``reads``: hidden paths shown read-only to this call (a tool's ``reads:``, the settings' ``reads:``,
  the paths its target's environment names; nami's saved-output folder of this session, whose paths
  results name);
- ``read_only``: paths inside the writable ones that stay read-only, because writing them is running code
  later, outside any sandbox: nami's configuration and tool folders, ``.git/hooks`` and ``.git/config``;
- ``visible``: folders under the private /tmp and /run or the hidden home that must stay readable (the
  PATH folders and the installations they belong to, the Python a child runs), and this session's
  saved-output folder;
- ``masked``: the files of the programs a rule denies by name alone (``command: [rm]``), each an empty
  read-only file in the sandbox of the calls that rule can match (the bash built-in's): no spelling,
  script or interpreter runs them (:func:`masked_files`);
- ``network``: the host's network, or (default) a namespace of its own with nothing but its own loopback.
Where a named path and a hidden one meet, the more specific wins; a path both hidden and named by
``reads:`` or ``writable:`` is shown.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections import ChainMap
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from nami_yaml.runners.sandbox.masks import masked_files, running_shell
from nami_yaml.runners.sandbox.plan_cache import PlanCache, look, look_into
from nami_yaml.runners.sandbox.probe import Availability, availability
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxNeeds, SandboxSettings, expand_paths
from nami_yaml.sensitive_paths import ProtectedPaths
from nami_yaml.xdg import home_folder, xdg_folder

WORKSPACE_WRITE, READ_ONLY, OFF = "workspace-write", "read-only", "off"

# Credentials a tool never needs to see unless it says so (``reads:``): the home folder is hidden as a
# whole anyway (``empty``), so these count where home is shown in part (a PATH installation such as
# ~/.cargo, a declared folder, a workspace that holds the home folder). Sockets that hand out root (a
# container engine's) are under /run, which is private as a whole (see PRIVATE_FOLDERS).
HIDDEN = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker/config.json",
    "~/.netrc", "~/.git-credentials", "~/.password-store", "~/.config/gh", "~/.config/hub", "~/.vault-token",
    "~/.npmrc", "~/.pypirc", "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.terraform.d/credentials.tfrc.json",
    "~/.config/op", "~/.oci", "~/.config/doctl", "~/.local/share/keyrings", "$XDG_RUNTIME_DIR",
    "~/.config/git/credentials", "~/.pgpass", "~/.my.cnf", "~/.s3cfg", "~/.boto", "~/.config/containers/auth.json",
    "~/.config/rclone", "~/.config/sops", "~/.m2/settings.xml", "~/.gradle/gradle.properties", "~/.terraformrc",
    "~/.bash_history", "~/.zsh_history", "~/.python_history", "~/.psql_history", "~/.mysql_history",
    # The same where XDG_CONFIG_HOME or XDG_DATA_HOME lies outside the home folder (inside, it is emptied).
    *(f"$XDG_CONFIG_HOME/{name}" for name in ("gh", "hub", "gcloud", "op", "doctl", "git/credentials", "rclone",
                                              "sops", "containers/auth.json")),
    "$XDG_DATA_HOME/keyrings",
)
# Variables naming a file (or folder) of credentials: what they name is hidden wherever it is, unless the
# call declares it (``reads:``) or its target's environment names it. Each entry of a list ($KUBECONFIG).
CREDENTIAL_VARIABLES = (
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "DOCKER_CONFIG", "KUBECONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR", "GH_CONFIG_DIR", "GNUPGHOME", "NETRC",
    "PASSWORD_STORE_DIR", "PGPASSFILE", "MYSQL_CONFIG_FILE", "SOPS_AGE_KEY_FILE", "TF_CLI_CONFIG_FILE",
    "BOTO_CONFIG", "RCLONE_CONFIG", "REGISTRY_AUTH_FILE", "HELM_REGISTRY_CONFIG", "NPM_CONFIG_USERCONFIG",
    "VAULT_CONFIG_PATH", "OCI_CLI_CONFIG_FILE", "GIT_CONFIG_GLOBAL", "S3CMD_CONFIG", "PIP_CONFIG_FILE",
)
# A PATH folder under home with one of these names belongs to an installation (its parent: ~/.pyenv for
# ~/.pyenv/shims, ~/go for ~/go/bin, an nvm node for .../bin), shown with it: the shims and programs
# there run what is beside them (pyenv's versions and libexec, node's lib/node_modules).
INSTALLATION_BINS = ("bin", "shims", "sbin")
# What of an installation is shown with its bin/shims: pyenv's and rbenv's versions, libexec and version file,
# node's and go's lib and pkg, the bin and shims beside each other.
INSTALLATION_PARTS = ("bin", "shims", "sbin", "lib", "lib64", "libexec", "versions", "version", "pkg", "plugins")
# Never shown as an installation: home itself (~/bin) and ~/.local, of which only lib/ goes with its bin/
# (pip --user scripts import from there); ~/.local/share and ~/.local/state hold keyrings and nami's own.
_SHARED_PARENTS = (".local",)
# Empty in the sandbox: /tmp (its own, writable), and /run and /var/run, where daemons keep their sockets
# (docker.sock, the D-Bus buses, systemd's): a unix socket stays reachable without any network.
PRIVATE_TMP = Path("/tmp")
PRIVATE_FOLDERS = (Path("/run"), Path("/var/run"))
# What git runs or follows, in a repository's .git folder (and in each submodule's, under .git/modules):
# read-only in a writable area, while objects, refs and the index stay writable so git keeps working.
GIT_NAMES = ("hooks", "config", "config.worktree", "commondir")
GIT_MODULES_DEPTH = 32  # submodules of submodules: .git/modules/a/modules/b/config
_VARIABLE = re.compile(r"\$\{?(\w+)")  # git runs what these say, also when you run git yourself later
KIND_TOOL, KIND_BASH, KIND_SERVER, KIND_NAMI, KIND_CHECK = "tool", "bash", "mcp server", "nami", "check"
KIND_HOOK = "hook"  # a program of agent.yaml's hooks: (runners/hooks.py)


@dataclass(frozen=True)
class SandboxPlan:
    """How one process runs. ``mode`` OFF runs it as it is (``reason`` says why); ``refusal`` set: it is
    not started at all (the sandbox is required and not available here)."""

    mode: str
    workspace: Path
    network: bool = False
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    reads: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    # Folders between a writable area and a path kept read-only, and the workspace's .git: each bound in
    # place (writable as before), so that as a mount point it cannot be renamed or removed. Else a call
    # would rename the folder above a read-only mount (rename() moves the mount along) and put a folder of
    # its own in its place: a new .git with core.fsmonitor, new code in a trusted tool's folder.
    pinned: tuple[Path, ...] = ()
    visible: tuple[Path, ...] = ()
    # Folders replaced by an empty read-only one (the home folder), where only what is shown in them is seen.
    empty: tuple[Path, ...] = ()
    # Files of the programs denied by name (rules' ``command: [rm]``): empty and read-only in the sandbox.
    masked: tuple[Path, ...] = ()
    host_proc: bool = False  # ``reads: [/proc]``: the host's processes (ps), instead of its own
    call_writes: tuple[Path, ...] = ()  # this call's approved ``writes:`` destinations (allowing_writes)
    sealed: tuple[Path, ...] = ()  # nami's own folders (hidden, never shown)
    # bwrap (found on the host's PATH when planning, never the tool's) and the namespace flags that work here
    runner: tuple[str, ...] = ()
    home: Path | None = None  # for messages: paths under it are written ~/...
    reason: str = ""
    refusal: str | None = None
    kind: str = KIND_TOOL  # whose plan: where the keys that change it are written
    origin: str = ""  # the tool file declaring the keys, for messages
    declared: SandboxNeeds = field(default_factory=SandboxNeeds)
    escalate: str = "ask"

    @property
    def active(self) -> bool:
        return self.mode != OFF and self.refusal is None

    def allowing_writes(self, paths: Iterable[Path]) -> SandboxPlan:
        """This plan with ``paths`` (the resolved ``writes:`` destinations of a call that got the approval
        its risk needs) writable for this call only: each path itself, nothing beside it. A destination
        kept read-only (a protected path: its approval was an exec one) becomes writable too. One that
        does not exist yet is made, empty, just before the call (:func:`make_destinations`)."""
        # Never what the sandbox hides (credentials, nami's own folders), whoever approved it.
        wanted = [path for path in (Path(os.path.normpath(p)) for p in paths)
                  if not _inside_any(path, (*self.hidden, *self.sealed))]
        kept = tuple(p for p in self.read_only if p not in wanted)
        mounts = [p for p in wanted if self.mode == READ_ONLY or not _inside(p, self.workspace)
                  or _inside_any(p, kept)]
        return replace(self, read_only=kept, call_writes=tuple(_unique((*self.call_writes, *mounts))))

    def unsandboxed(self, reason: str) -> SandboxPlan:
        """The same call without the sandbox (a person approved rerunning it so, see escalate)."""
        return replace(self, mode=OFF, reason=reason, refusal=None)


def make_destinations(plan: SandboxPlan) -> list[Path]:
    """Create, empty, the approved write destinations that do not exist yet (in folders that do), so
    they can be mounted; returns them, for :func:`remove_unused`."""
    made = []
    for path in plan.call_writes if plan.active else ():
        if not os.path.lexists(path) and path.parent.is_dir():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
            except OSError:
                continue
            made.append(path)
    return made


def remove_unused(made: Iterable[Path]) -> None:
    """Remove the destinations :func:`make_destinations` made that the call left empty."""
    for path in made:
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
                path.unlink()


def nami_folders(env: Mapping[str, str]) -> list[Path]:
    """nami's own folders: state (trust store, audit log, saved output), config, data (sessions), cache."""
    return [xdg_folder(name, default, env) / "nami" for name, default in
            (("XDG_STATE_HOME", ".local/state"), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
             ("XDG_CACHE_HOME", ".cache"))]


def plan_for(ctx: RuntimeContext, needs: SandboxNeeds | None = None, *, kind: str = KIND_TOOL,
             visible: Sequence[Path] = (), read_only: bool = False,
             env: Mapping[str, str] | None = None, masks: bool | None = None) -> SandboxPlan:
    """The plan of one process started for ``ctx``'s run: ``needs`` is the tool's (or server's) own
    ``sandbox:``; ``kind`` says whose process it is; ``read_only``: the workspace is not written (rg,
    nami's own helpers); ``env``: the variables ``$NAME`` in the declared paths are read from (default the
    host's; a tool's own fixed env and its target's env come first there, as the process sees them);
    ``masks``: whether the programs rules deny by name (``ctx.denied_programs``) are masked in it (default:
    for the bash built-in, the one tool command rules match). KIND_NAMI processes are nami's fixed
    programs: sandboxed where possible, run as they are where not, whatever the mode."""
    settings = ctx.sandbox
    needs = needs or SandboxNeeds()
    masking = kind == KIND_BASH if masks is None else masks
    if settings.mode == OFF:
        return _off(ctx.workspace, kind, needs, ctx.host_env.get("HOME", ""), settings.escalate,
                    settings.reason or "sandbox.mode is off")
    found = availability(ctx.host_env)
    if not found.available:
        base = replace(_empty(ctx, kind, needs), escalate=settings.escalate)
        if settings.mode in ("required", READ_ONLY) and kind != KIND_NAMI:
            return replace(base, refusal=f"not run: the sandbox is required (sandbox.mode: {settings.mode}) and "
                                         f"not available here: {found.describe()}")
        return replace(base, reason=f"no sandbox here: {found.reason}")
    assert found.bwrap is not None
    masked = ctx.denied_programs if masking else ()

    def make() -> SandboxPlan:
        base = replace(_empty(ctx, kind, needs), escalate=settings.escalate, runner=(found.bwrap, *found.flags))
        plan = _build(ctx, settings, needs, base, visible=visible,
                      read_only=read_only or settings.mode == READ_ONLY, paths_env=env)
        if masked:
            path = ctx.host_env.get("PATH", "")
            plan = replace(plan, masked=masked_files(masked, path, running_shell(path)))
        return plan

    return PLANS.plan(_inputs(ctx, needs, kind, tuple(visible), read_only, env, masked, found), make)


# The plans of this process by their inputs, each kept while the folders its making looked at are unchanged.
PLANS = PlanCache()


def _inputs(ctx: RuntimeContext, needs: SandboxNeeds, kind: str, visible: tuple[Path, ...], read_only: bool,
            env: Mapping[str, str] | None, masked: tuple[str, ...], found: Availability) -> Hashable:
    """Everything besides the files that a plan is made from: the settings, the tool's needs, the
    environment its paths are expanded with (the host's and the call's), its target, the protected paths,
    nami's import path, the programs masked, and the bwrap found."""
    protected = ctx.protected_paths
    target = None if ctx.target is None else tuple(ctx.target.env.items())
    return (ctx.sandbox, needs, kind, visible, read_only, masked, found, ctx.workspace, ctx.spill_dir,
            _env_key(ctx.host_env, ctx.host_env), None if env is None else _env_key(env, ctx.host_env), target,
            tuple(protected.files), tuple(protected.folders), tuple(sys.path), sys.prefix)


def _env_key(env: Mapping[str, str], host: Mapping[str, str]) -> Hashable:
    """An environment's variables as a key; the view build_invocation passes (the call's own variables
    before the host's) as its layers, the host's named by reference to the first part of the key."""
    if isinstance(env, ChainMap):
        return tuple("host" if layer is host else _env_key(layer, host) for layer in env.maps)
    return tuple(env.items())


def bash_needs(ctx: RuntimeContext) -> SandboxNeeds:
    """The bash built-in has no tool file: its network is the settings' ``sandbox.network``."""
    return SandboxNeeds(network=ctx.sandbox.network)


BASH_BUILTIN = "nami_yaml.builtins.shell:bash"


def builtin_plan(target: str, ctx: RuntimeContext) -> SandboxPlan | None:
    """The sandbox a built-in's process will run in, shown before the call (dry run, approval): bash's."""
    return plan_for(ctx, bash_needs(ctx), kind=KIND_BASH) if target == BASH_BUILTIN else None


@functools.lru_cache(maxsize=64)
def _off(workspace: Path, kind: str, needs: SandboxNeeds, home: str, escalate: str, reason: str) -> SandboxPlan:
    """The plan of a process run as it is: made of settings alone (no file is looked at), so one object
    serves every call of a tool (plans are frozen); making it anew took a third of preparing a call."""
    return SandboxPlan(mode=OFF, workspace=workspace, network=True, kind=kind, origin=needs.origin,
                       declared=needs, home=home_folder({"HOME": home}), escalate=escalate, reason=reason)


def _empty(ctx: RuntimeContext, kind: str, needs: SandboxNeeds) -> SandboxPlan:
    return SandboxPlan(mode=OFF, workspace=ctx.workspace, network=True, kind=kind, origin=needs.origin,
                       declared=needs, home=home_folder(ctx.host_env))


def _build(ctx: RuntimeContext, settings: SandboxSettings, needs: SandboxNeeds, base: SandboxPlan, *,
           visible: Sequence[Path], read_only: bool, paths_env: Mapping[str, str] | None = None) -> SandboxPlan:
    env = ctx.host_env
    named_env = env if paths_env is None else paths_env
    workspace = ctx.workspace
    sealed = [_real(p) for p in nami_folders(env)]
    # Named paths as the kernel will see them: links followed, so a link cannot move a mount elsewhere.
    writable = [] if read_only else _existing(expand_paths((*settings.writable, *needs.writable), named_env,
                                                           workspace))
    reads = _existing(expand_paths((*settings.reads, *needs.reads), named_env, workspace))
    home = _real(home_folder(env))
    # An empty home in its place, unless the workspace is the home folder or holds it.
    empty = [home] if home != Path("/") and not _inside(home, workspace) and os.path.isdir(_seen(home)) else []
    if ctx.target is not None and empty:
        reads += _target_paths(tuple(ctx.target.env.values()), home)
    host_proc = Path("/proc") in reads
    writable = [p for p in writable if not _inside_any(p, sealed)]
    reads = [p for p in reads if p != Path("/proc") and not _inside_any(p, sealed)]
    areas = [workspace, *writable] if not read_only else []
    for folder in sealed:
        if not os.path.lexists(_seen(folder)) and _inside_any(folder, areas):
            # Made now, so that it is hidden too: else a call could plant nami's config or trust store there.
            os.makedirs(folder, 0o700, exist_ok=True)
    named = set(writable) | set(reads)
    written = (*HIDDEN, *_CREDENTIAL_ENTRIES, *settings.hide)
    used = tuple((name, env[name]) for name in sorted(set(_VARIABLE.findall(" ".join(written)))) if name in env)
    candidates = _hidden_candidates(written, str(home), used)
    hidden = [p for p in _existing(candidates) if p not in named]
    hidden += [p for p in sealed if os.path.lexists(_seen(p))]
    # A folder the workspace is in is never hidden (the workspace would vanish), only what is inside it.
    hidden = _unique([p for p in hidden if not _inside(workspace, p)])
    if needs.network:
        reads.extend(_resolver_files())
    path = env.get("PATH", "")
    spill = _real(ctx.spill_dir)
    shown = _shown((*_existing(visible), *_code_folders(path, tuple(sys.path)),
                    *(_home_shown(path, home) if empty else ())),
                   spill if os.path.isdir(_seen(spill)) else None, tuple(empty), tuple(hidden), (workspace, *writable))
    kept = [p for p in _protected_inside(ctx.protected_paths, workspace, areas) if not _inside_any(p, hidden)]
    kept += [p for p in _own_python(sys.prefix, sys.base_prefix, tuple(sys.path)) if not _inside_any(p, hidden)
             and any(_inside(p, area) and p != area for area in areas)]
    pinned = [p for p in _pinned(kept, workspace, areas) if not _inside_any(p, hidden)]
    return replace(base, mode=READ_ONLY if read_only else WORKSPACE_WRITE, network=needs.network,
                   writable=tuple(_unique(writable)), hidden=tuple(hidden), reads=tuple(_unique(reads)),
                   read_only=tuple(_unique(kept)), pinned=tuple(pinned), visible=tuple(shown),
                   empty=tuple(empty), host_proc=host_proc, sealed=tuple(sealed))


@functools.lru_cache(maxsize=64)
def _shown(candidates: tuple[Path, ...], spill: Path | None, empty: tuple[Path, ...], hidden: tuple[Path, ...],
           areas: tuple[Path, ...]) -> tuple[Path, ...]:
    """The folders shown read-only where nothing else mounts them: under the private /tmp and /run or the
    emptied home, never hidden, and never over a writable area (a folder both named on a command line and
    writable stays writable); and this session's saved output (results name its files, read tools read
    it). Pure path arithmetic, the same for most calls of a session: computed once for each."""
    shown = [p for p in candidates if _inside_any(p, (PRIVATE_TMP, *PRIVATE_FOLDERS, *empty))
             and not _inside_any(p, hidden) and not _inside_any(p, areas)]
    if spill is not None:
        shown.append(spill)
    return tuple(_outermost(_unique(shown), hidden))


def _outermost(shown: list[Path], hidden: Sequence[Path]) -> list[Path]:
    """``shown`` without the folders another one already shows (one mount fewer each), unless something
    hidden lies between the two (then the inner one is mounted again over it)."""
    return [p for p in shown if not any(
        p != outer and _inside(p, outer) and not any(_inside(h, outer) and _inside(p, h) for h in hidden)
        for outer in shown)]


_CREDENTIAL_ENTRIES = tuple(f"${name}" for name in CREDENTIAL_VARIABLES)


@functools.lru_cache(maxsize=16)
def _target_paths(values: tuple[str, ...], home: Path) -> tuple[Path, ...]:
    """The existing paths strictly inside ``home`` that a target's environment names (each entry of a list
    such as $KUBECONFIG's): what the project says a call on that target uses. Looked at once per target."""
    named = [Path(part) for value in values for part in value.split(os.pathsep) if os.path.isabs(part)]
    return tuple(p for p in _existing(named) if _inside(p, home) and p != home)


@functools.lru_cache(maxsize=16)
def _home_shown(path: str, home: Path) -> tuple[Path, ...]:
    """What nami shows of a hidden home folder to every call: the folders of the PATH that lie under it
    (read-only), each with the installation it belongs to (the parent of a ``bin`` or ``shims`` folder:
    ~/.pyenv, ~/go, an nvm node; for ~/.local/bin, ~/.local/lib beside it), where what runs from there
    finds the rest of itself. Looked at once per PATH."""
    found: list[Path] = []
    for folder in (Path(p) for p in path.split(os.pathsep) if os.path.isabs(p)):
        real = _real(folder)
        if not _inside(real, home) or real == home or not os.path.isdir(_seen(real)):
            continue
        found.append(real)
        parent = real.parent
        if real.name in INSTALLATION_BINS and parent != home:
            if parent.name in _SHARED_PARENTS and parent.parent == home:
                found.append(parent / "lib")
            else:
                # Of the installation, the parts a program there runs or loads, never the whole folder: beside
                # ~/.pulumi/bin lies credentials.json, beside ~/.config/bin all of ~/.config.
                found += [parent / part for part in INSTALLATION_PARTS]
    return tuple(_existing(found))


def _pinned(kept: Sequence[Path], workspace: Path, areas: Sequence[Path]) -> list[Path]:
    """The folders strictly between a writable area and each path of ``kept``, and the .git folder of the
    workspace and of each writable area: what a call must not be able to rename or remove, since the read-only mounts below them would
    move along (a mount point cannot be renamed: rename() fails with EBUSY)."""
    folders: list[Path] = []
    for area in _unique([workspace, *areas]):
        git = area / ".git"
        if _inside_any(git, areas) and os.path.isdir(_seen(git)) and not os.path.islink(_seen(git)):
            folders.append(git)
    for path in kept:
        area = next((a for a in areas if _inside(path, a) and path != a), None)
        if area is None:
            continue
        folders += [parent for parent in path.parents if _inside(parent, area) and parent != area]
    return sorted(set(folders), key=lambda p: len(p.parts))


def _protected_inside(protected: ProtectedPaths, workspace: Path, areas: list[Path]) -> list[Path]:
    """The existing paths of ``protected`` (and the .git/hooks, .git/config, ... of the workspace's and each
    writable area's repository) strictly inside a writable area. Protected paths are kept case-folded; the real names are found on disk."""
    if not areas:
        return []
    # The workspace's repository, and one in each writable area (sandbox.writable: ~/src/lib): the same
    # config and hooks, run later by git.
    found = [path for area in _unique([workspace, *areas]) for path in _git_paths(area / ".git", area)]
    for key in (*protected.files, *protected.folders):
        for area in areas:
            folded = str(area).casefold()
            if key.startswith(folded + os.sep):
                real = _real_case(area, key[len(folded) + 1:].split(os.sep))
                if real is not None:
                    found.append(real)
                break
    return [p for p in found if any(_inside(p, area) and p != area for area in areas)]


def _git_paths(git: Path, workspace: Path) -> list[Path]:
    """What git runs or follows in the workspace's repository: .git itself where it is a file (a linked
    worktree's or a submodule's ``gitdir:`` pointer), else the GIT_NAMES in .git and in each submodule's
    folder under .git/modules."""
    if not os.path.lexists(_seen(git)):
        return []
    if os.path.islink(_seen(git)):  # what it points to is the repository git uses: protected where it is writable
        git = _real(git)
    if os.path.isfile(_seen(git)):
        return [git]
    if not os.path.isdir(_seen(git)):
        return []
    hooks = git / "hooks"
    # Only in a repository of the workspace's own: a .git link a call made must not get nami to make a
    # folder wherever it points, outside any sandbox.
    if not os.path.lexists(_seen(hooks)) and _inside(git, workspace) and os.path.isfile(_seen(git / "HEAD")):
        # Made now, empty (git makes it too), so that it is mounted read-only: else a call could create
        # .git/hooks/pre-commit for the user's next commit.
        with contextlib.suppress(OSError):
            os.mkdir(hooks, 0o755)
    found: list[Path] = []
    folders, depth = [git], 0
    while folders and depth <= GIT_MODULES_DEPTH:
        found += [folder / name for folder in folders for name in GIT_NAMES if os.path.lexists(_seen(folder / name))]
        inner = []
        for folder in folders:
            modules = folder / "modules"
            if os.path.isdir(_seen(modules)) and not os.path.islink(_seen(modules)):
                inner += _subfolders(modules)
        folders, depth = inner, depth + 1
    return found


def _subfolders(folder: Path) -> list[Path]:
    """The real folders of ``folder`` and below it that hold a submodule's git folder (a ``config``), as
    .git/modules nests them by the submodule's path (``modules/libs/a``): not behind links."""
    found = []
    look(folder)
    for root, dirs, files in os.walk(folder):
        look_into(root)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        if "config" in files or "HEAD" in files:
            found.append(Path(root))
            dirs[:] = []  # its own submodules (its modules/ folder) are the next round's
        # A submodule may be named objects or refs (a cloned repository names its own): only a git folder's
        # own objects/ and refs/ are skipped, and the walk stops at a git folder anyway.
    return found


def _real_case(root: Path, parts: list[str]) -> Path | None:
    """``root / parts`` with each part matched case-insensitively against the folder's entries."""
    current = root
    for part in parts:
        candidate = current / part
        if os.path.lexists(_seen(candidate)):
            current = candidate
            continue
        try:
            look_into(current)
            names = os.listdir(current)
        except OSError:
            return None
        match = next((name for name in names if name.casefold() == part), None)
        if match is None:
            return None
        current = current / match
    return current


def _resolver_files() -> list[Path]:
    """What name resolution reads from /run (Ubuntu's /etc/resolv.conf points into it): shown to calls
    with the network, so DNS works there while /run stays private."""
    target = _real(Path("/etc/resolv.conf"))
    return [target] if _inside_any(target, PRIVATE_FOLDERS) and target.exists() else []


@functools.lru_cache(maxsize=16)
def _hidden_candidates(written: tuple[str, ...], home: str, used: tuple[tuple[str, str], ...]) -> tuple[Path, ...]:
    """HIDDEN and ``hide:`` expanded with HOME and the variables they use (what exists is looked at per call)."""
    return tuple(expand_paths(written, {**dict(used), "HOME": home}, Path(home)))


@functools.lru_cache(maxsize=16)
def _code_folders(path: str, import_path: tuple[str, ...]) -> tuple[Path, ...]:
    """Where programs and nami's own Python come from: the PATH folders, and the interpreter's prefix and
    import path (a child running nami's Python, or a tool started with it, imports from there). Resolved
    once per PATH: these are installations, not what a tool changes."""
    folders = [Path(p) for p in path.split(os.pathsep) if os.path.isabs(p)]
    # nami's own package too: an editable install's (a checkout's) is on no import path, only named by a
    # finder in site-packages, and a child running nami's Python under a private /tmp found no nami_yaml.
    package = Path(__file__).resolve().parents[2]  # nami_yaml/ (this file: nami_yaml/runners/sandbox/plan.py)
    return tuple(_existing([*folders, Path(sys.prefix), Path(sys.base_prefix),
                            *(Path(p) for p in import_path if os.path.isabs(p)), package]))


@functools.lru_cache(maxsize=16)
def _own_python(prefix: str, base_prefix: str, import_path: tuple[str, ...]) -> tuple[Path, ...]:
    """nami's own interpreter (its prefix: a virtual environment in the workspace, as a clone's .venv) and
    the site-packages folders it imports from: a `.pth` file or a module written there runs at every later
    start of that Python, nami's own outside any sandbox included. Read-only where they are in a writable
    area."""
    folders = [Path(prefix), Path(base_prefix),
               *(Path(p) for p in import_path if os.path.isabs(p) and os.path.basename(p) in _SITE_FOLDERS)]
    return tuple(_existing(folders))


_SITE_FOLDERS = ("site-packages", "dist-packages")


def _existing(paths: Iterable[Path]) -> list[Path]:
    # lexists first: most of HIDDEN is missing on a given machine, and realpath stats every component.
    return [real for real in (_real(p) for p in paths if os.path.lexists(_seen(p))) if os.path.exists(real)]


def _real(path: Path) -> Path:
    return Path(os.path.realpath(_seen(path)))


def _seen(path: Path) -> Path:
    """``path``, noted as looked at (plan_cache.py): a plan is kept while what its checks read is unchanged."""
    look(path)
    return path


def _unique(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def _inside(path: PurePath, folder: PurePath) -> bool:
    """``path`` is ``folder`` or below it (whole components; both normalized)."""
    inner, outer = str(path), str(folder)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


def _inside_any(path: PurePath, folders: Iterable[PurePath]) -> bool:
    return any(_inside(path, folder) for folder in folders)


def named_paths(argv: list[str]) -> list[Path]:
    """The existing absolute paths among ``argv``'s words: a file's folder, or the folder itself."""
    found: list[Path] = []
    for word in argv:
        if not word.startswith("/") or "\x00" in word:
            continue
        path = Path(word)
        if len(path.parts) < 3:  # never a whole /tmp or /run
            continue
        try:
            if path.is_file():
                found.append(path.parent)
            elif path.is_dir():
                found.append(path)
        except (OSError, ValueError):
            continue
    return found
