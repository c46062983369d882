"""This checkout against an earlier revision of itself, measured in the same run: start-up (`nami --help`),
`nami check` and opening a project of N generated tool files (default 1,000; 50 with --quick); each in
wall time and in CPU time (user + system, of that process: steadier than wall time on a busy machine).

    python -m bench --only against                 # against the parent commit, HEAD~1
    python -m bench --only against --base main     # against any revision git knows
    python -m bench.against [REV]

The base revision is checked out into a temporary `git worktree add --detach` (removed afterwards, also on
an error, Ctrl-C or SIGTERM). Every figure runs in a fresh process started the same way for both trees,
`python -m nami_yaml …` with `PYTHONPATH` set to the tree, and each tree's `nami_yaml.__file__` is checked
to be its own (never the installed one). The two trees take turns in every round, in alternating order
(current, base; base, current; …), and each figure is the median of those rounds, like the other sections;
the label adds the lowest of each tree's runs and their ratio (the least disturbed run).
Opening is timed inside the process, from importing `nami_yaml.app.project` to `open_project(config)`
returning (the interpreter's own start is in the start-up row); when either tree has no such opener, both
are timed on `nami tools list` in that project instead, and the row says so.

Without git, outside a git checkout, or when the revision is not there (a shallow clone), each row says
"not measured: why" and has no figure.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT, Row, Settings, bench_env, median, scratch, timed, turns, write_project
from bench.load_tools import generated

OPENER_MODULE, OPENER = "nami_yaml.app.project", "open_project"
# Run in each tree's process: where nami_yaml comes from, and whether the tree has the opener.
PROBE = f"""
import importlib, json, nami_yaml
try:
    opener = callable(getattr(importlib.import_module({OPENER_MODULE!r}), {OPENER!r}, None))
except ImportError:
    opener = False
print(json.dumps({{"file": nami_yaml.__file__, "opener": opener}}))
"""
# Run in each tree's process: import the opener and open the project named on the command line.
OPEN = f"""
import json, sys, time
started, cpu = time.perf_counter(), time.process_time()
from {OPENER_MODULE} import {OPENER}
project = {OPENER}(sys.argv[1])
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
import nami_yaml
print(json.dumps({{"file": nami_yaml.__file__, "seconds": elapsed, "cpu": cpu, "tools": len(project.registry)}}))
"""
MEASURES = ("against.help", "against.check", "against.open")
KEYS = tuple(key for measure in MEASURES for key in (measure, f"{measure}.cpu"))


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    cpu: float  # seconds of user and system time of the measured process


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


class NotMeasured(Exception):
    """Why there is no comparison here: no git, no checkout, no such revision; or the base tree failed."""


@dataclass(frozen=True)
class Tree:
    name: str  # "current" or "base"
    folder: Path  # holds nami_yaml/
    shown: str  # e.g. "2970896 (`HEAD~1`)"

    def env(self, home: Path) -> dict[str, str]:
        return {**bench_env(home), "PYTHONPATH": str(self.folder)}


def git(*args: str, cwd: Path = ROOT) -> str:
    """git's stdout; NotMeasured with git's own words when it fails or is not installed."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=300)
    except FileNotFoundError:
        raise NotMeasured("git is not installed") from None
    if done.returncode != 0:
        words = (done.stderr.strip().splitlines() or [f"exited {done.returncode}"])[-1]
        raise NotMeasured(f"git {args[0]}: {words}")
    return done.stdout.strip()


def base_commit(rev: str) -> str:
    """The full hash of ``rev`` in this checkout; NotMeasured when this is no git checkout or git has no
    such commit (a shallow clone has no parent of HEAD)."""
    try:
        top = git("rev-parse", "--show-toplevel")
    except NotMeasured as exc:
        raise NotMeasured(f"{ROOT} is not a git checkout ({exc})") from None
    if Path(top).resolve() != ROOT.resolve():
        raise NotMeasured(f"{ROOT} is not the root of a git checkout (that is {top})")
    try:
        return git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    except NotMeasured:
        shallow = git("rev-parse", "--is-shallow-repository") == "true"
        raise NotMeasured(f"no revision {rev!r} in this checkout{' (a shallow clone)' if shallow else ''}") from None


@contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit while inside, so that the worktree is removed as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def worktree(commit: str) -> Iterator[Path]:
    """A detached worktree of ``commit`` in a temporary folder, removed on the way out whatever happens.
    Only this worktree is touched: never `git worktree prune`, which would judge other people's."""
    folder = Path(tempfile.mkdtemp(prefix="nami-bench-base-"))
    tree = folder / "nami-bench-base"  # also the name of its entry in .git/worktrees/
    try:
        with terminated_as_exit():
            try:
                git("worktree", "add", "--detach", "--quiet", str(tree), commit)
                yield tree
            finally:  # also after an add cut short: whatever of it was made
                remove_worktree(tree)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_worktree(tree: Path) -> None:
    # Its entry in the shared .git/worktrees/, read first: if removing fails, that entry is deleted by hand.
    gitfile = tree / ".git"
    entry = None
    if gitfile.is_file():
        text = gitfile.read_text(encoding="utf-8").strip()
        entry = Path(text.removeprefix("gitdir:").strip()) if text.startswith("gitdir:") else None
    try:
        git("worktree", "remove", "--force", "--force", str(tree))
    except NotMeasured:
        shutil.rmtree(tree, ignore_errors=True)
        if entry is not None and entry.parent.name == "worktrees":
            shutil.rmtree(entry, ignore_errors=True)


def dirty(paths: tuple[str, ...] = ("nami_yaml",)) -> bool:
    """Whether the checkout's code differs from its HEAD (then the current figures are of that code)."""
    return bool(git("status", "--porcelain", "--", *paths))


def run_in(tree: Tree, args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=tree.env(home), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        shown = "-c <script>" if args[0] == "-c" else " ".join(args)
        what = f"{tree.name} ({tree.shown}): `python {shown}` exited {done.returncode}: {tail[0]}"
        if tree.name == "base":
            raise NotMeasured(what)
        raise RuntimeError(f"{what}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def own_file(tree: Tree, reported: str) -> None:
    """The tree's process imported the tree's nami_yaml, not the installed one (or the other tree's)."""
    if not Path(reported).resolve().is_relative_to(tree.folder.resolve()):
        raise RuntimeError(f"the {tree.name} tree's process imported nami_yaml from {reported}, not {tree.folder}")


def probe(tree: Tree, cwd: Path, home: Path) -> bool:
    """Checks where the tree's nami_yaml comes from; whether it has the opener."""
    found = json.loads(run_in(tree, ["-c", PROBE], cwd, home).stdout)
    own_file(tree, found["file"])
    return bool(found["opener"])


def compiled(tree: Tree) -> None:
    """Both trees' .pyc files written before anything is timed: bench_env keeps processes from writing
    them, and a fresh worktree has none, so the base would compile itself at every start."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(tree.folder / "nami_yaml")],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)


def compare(trees: tuple[Tree, Tree], sample: Callable[[Tree], Sample],
            settings: Settings) -> dict[str, list[Sample]]:
    """Each tree's figures, taking turns in alternating order; warm-up runs first."""
    for _ in range(settings.warmup):
        for tree in trees:
            sample(tree)
    return turns({tree.name: (lambda t=tree: sample(t)) for tree in trees}, settings.repeat, alternate=True)


def not_measured(why: str, count: int, keys: tuple[str, ...] = KEYS, fallback: bool = False) -> list[Row]:
    return [Row(key, f"{label(key, count, fallback)} (not measured: {why})", None, "ms") for key in keys]


def label(key: str, count: int, fallback: bool = False) -> str:
    """What the row times; the current tree's revision follows it, the base's is the baseline's label."""
    what = {"against.help": "`nami --help`",
            "against.check": f"`nami check`, {count:,} tool files",
            "against.open": (f"`nami tools list`, {count:,} tool files (not `{OPENER}`: a tree has none)"
                             if fallback else f"`{OPENER}`, {count:,} tool files (its import included)"),
            }[key.removesuffix(".cpu")]
    return f"{what}{', CPU time' if key.endswith('.cpu') else ''}, against a base revision"


def measure(settings: Settings) -> list[Row]:
    count = settings.size(1000, 50)
    try:
        return compared(base_commit(settings.base), settings, count)
    except NotMeasured as exc:  # no git, no checkout, no such revision; the base tree failing to start
        return not_measured(str(exc), count)


def compared(commit: str, settings: Settings, count: int) -> list[Row]:
    with scratch() as home, worktree(commit) as base_folder:
        project = home / "project"
        (project / "tools").mkdir(parents=True)
        generated(project / "tools", count)  # the files bench.load_tools times, in a project
        config = write_project(project, "http://127.0.0.1:9/v1", "tools: {files: [tools/]}\n")
        head = git("rev-parse", "--short", "HEAD")
        current = Tree("current", ROOT, f"{head}{' with uncommitted changes' if dirty() else ''}")
        short = git("rev-parse", "--short", commit)
        base = Tree("base", base_folder, short if commit.startswith(settings.base) else f"{short} (`{settings.base}`)")
        trees = (current, base)
        if not (base.folder / "nami_yaml" / "__init__.py").is_file():  # else the installed one would answer
            raise NotMeasured(f"{base.shown} has no nami_yaml package")
        for tree in trees:
            compiled(tree)
        openers = [probe(tree, project, home) for tree in trees]

        def command(args: list[str]) -> Callable[[Tree], Sample]:
            def sample(tree: Tree) -> Sample:
                cpu = children_cpu()  # one child at a time: the difference is this one's
                wall = timed(lambda: run_in(tree, ["-m", "nami_yaml", *args], project, home))
                return Sample(wall, children_cpu() - cpu)

            return sample

        def opened(tree: Tree) -> Sample:
            found = json.loads(run_in(tree, ["-c", OPEN, config.name], project, home).stdout)
            own_file(tree, found["file"])
            if found["tools"] < count:
                raise RuntimeError(f"the {tree.name} tree opened {found['tools']} tools, not {count} and more")
            return Sample(found["seconds"], found["cpu"])

        fallback = not all(openers)
        samples = {"against.help": command(["--help"]),  # the project's folder is the current one
                   "against.check": command(["check", "--config", config.name]),
                   "against.open": command(["tools", "list", "--config", config.name]) if fallback else opened}
        rows = []
        for key, sample in samples.items():
            try:
                samples = compare(trees, sample, settings)
            except NotMeasured as exc:
                rows += not_measured(str(exc), count, (key, f"{key}.cpu"), fallback)
                continue
            for row_key, figure in ((key, "wall"), (f"{key}.cpu", "cpu")):
                times = {name: [getattr(s, figure) for s in found] for name, found in samples.items()}
                # The median is the figure, as in the other sections; the lowest of each, the least disturbed
                # run (a busy machine only ever adds time), is shown beside it when there are several.
                low = (f"; lowest {min(times['current']) * 1000:,.0f} against {min(times['base']) * 1000:,.0f} "
                       f"ms ({min(times['current']) / min(times['base']):.2f}×)" if settings.repeat > 1 else "")
                rows.append(Row(row_key, f"{label(row_key, count, fallback)}; this checkout: {current.shown}{low}",
                                median(times["current"]) * 1000, "ms", median(times["base"]) * 1000,
                                f"base {base.shown}"))
    return rows


def main(argv: list[str]) -> None:
    from bench.table import print_rows

    started = time.perf_counter()
    print_rows(measure(Settings(quick=False, repeat=5, base=argv[0] if argv else "HEAD~1")))
    sys.stderr.write(f"bench.against: {time.perf_counter() - started:.0f} s\n")


if __name__ == "__main__":
    main(sys.argv[1:])
