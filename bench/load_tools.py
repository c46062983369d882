"""Loading: parse and validate N generated tool files (default 1,000; target under 0.5 s) through the real
loader, against PyYAML's C parser alone on the same files; `nami check` and `nami run`'s start (to its
first request) in a project of those files, against a project with none; and `nami tools list` in a project
that takes the whole tool library, against the same command in a project with only the built-ins.

    python -m bench.load_tools
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from bench.common import (
    Row,
    Settings,
    bench_env,
    interleaved,
    median_time,
    nami_command,
    run,
    scratch,
    timed,
    turns,
    write_project,
)
from nami_yaml.paths import expand_tool_paths
from nami_yaml.registry.library import library_groups
from nami_yaml.registry.loader import load_tools
from nami_yaml.spec import validated_cache
from nami_yaml.testing import FakeOpenAIServer, text

TARGET_SECONDS, TARGET_FILES = 0.5, 1000  # the target: 1,000 files in under half a second
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # what a careful loader would use: the C parser
TEMPLATE = """\
name: tool_{n}
description: Example tool number {n}; shows recent commits filtered by author.
risk: read
parameters:
  type: object
  properties:
    author: {{type: string, description: Author to filter by.}}
    max_count: {{type: integer, minimum: 1, maximum: 100, default: 20}}
    all: {{type: boolean, default: false}}
  required: [author]
command: [git, log, "--max-count={{max_count}}", --author, "{{author}}", [--all, "{{all}}"]]
timeout: 30
"""


def generated(folder: Path, count: int) -> list[Path]:
    paths = []
    for n in range(count):
        path = folder / f"tool_{n:04}.yaml"
        path.write_text(TEMPLATE.format(n=n))
        paths.append(path)
    return paths


def load_folder(folder: Path, count: int) -> None:
    tools, problems = load_tools(expand_tool_paths(str(folder), Path("/")))
    if len(tools) != count or problems:
        raise RuntimeError(f"expected {count} tools, got {len(tools)}; {problems[:3]}")


def load_cold(folder: Path, count: int, caches: Path) -> None:
    """The load as the first command after the files changed does it: an empty cache of valid tool files
    (spec/validated_cache.py), so every file is parsed and checked; the pack it writes goes to a folder of
    its own, never the user's cache."""
    with cache_folder(Path(tempfile.mkdtemp(dir=caches))):
        load_folder(folder, count)


def load_kept(folder: Path, count: int, kept: Path) -> None:
    """The load as every later command does it: a new process (nothing in memory) finding the pack a
    previous command wrote in ``kept``."""
    with cache_folder(kept):
        load_folder(folder, count)


@contextlib.contextmanager
def cache_folder(folder: Path) -> Iterator[None]:
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    validated_cache.forget()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = before
        validated_cache.forget()


def parse_only(paths: list[Path]) -> None:
    for path in paths:
        with path.open(encoding="utf-8") as stream:
            yaml.load(stream, Loader=LOADER)


def many_files_rows(settings: Settings, home: Path, folder: Path, count: int) -> list[Row]:
    """`nami check` and `nami run`'s start (until its first request reaches the server) in a project of
    ``count`` tool files, each against the same project with none (issue 42's goals: 1.5× and 1.3×)."""
    env = bench_env(home)
    nami = nami_command()
    with FakeOpenAIServer(responder=lambda body: text("done")) as server:
        many = write_project(home / "many", server.base_url, f"tools: {{files: ['{folder}']}}\nsandbox: {{mode: off}}\n")
        none = write_project(home / "none", server.base_url, "sandbox: {mode: off}\n")

        def check(config: Path) -> float:
            """CPU seconds of `nami check` (user and system): on a shared machine, less disturbed than its wall
            time by what else runs."""
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            run([*nami, "check", "--config", str(config)], config.parent, env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

        def start(config: Path) -> float:
            """Seconds from launching `nami run` to its first request at the server."""
            server.requests.clear()
            launched = time.monotonic()
            run([*nami, "run", "--config", str(config), "hello"], config.parent, env)
            return server.requests[0].arrived - launched

        for _ in range(settings.warmup):
            check(many), check(none), start(many), start(none)
        found = turns({"check_many": lambda: check(many), "check_none": lambda: check(none),
                       "start_many": lambda: start(many), "start_none": lambda: start(none)}, settings.repeat,
                      alternate=True)
    # The lowest of the runs: each does the same work, and the machine's pauses only ever add time.
    low = {name: min(values) for name, values in found.items()}
    spread = {name: f"{min(v):.2f}-{max(v):.2f} s" for name, v in found.items()}
    return [
        Row("load.check_many", f"`nami check`, {count:,} tool files, CPU time (lowest; runs {spread['check_many']})",
            low["check_many"], "s", low["check_none"], f"no tool files (runs {spread['check_none']})", "≤ 1.5×",
            low["check_many"] <= 1.5 * low["check_none"]),
        Row("load.start_many", f"`nami run` to its first request, {count:,} tool files (lowest; runs "
                               f"{spread['start_many']})", low["start_many"], "s", low["start_none"],
            f"no tool files (runs {spread['start_none']})", "≤ 1.3×", low["start_many"] <= 1.3 * low["start_none"]),
    ]


def measure(settings: Settings) -> list[Row]:
    count = settings.size(1000, 100)
    rows = []
    with scratch() as home:
        folder = home / "tools"
        folder.mkdir()
        paths = generated(folder, count)
        caches = home / "caches"
        (caches / "kept").mkdir(parents=True, mode=0o700)
        caches.chmod(0o700)
        loaded = median_time(lambda: load_cold(folder, count, caches), settings.repeat, settings.warmup)
        load_kept(folder, count, caches / "kept")  # the previous command, writing the pack
        kept = median_time(lambda: load_kept(folder, count, caches / "kept"), settings.repeat, settings.warmup)
        parsed = median_time(lambda: parse_only(paths), settings.repeat, settings.warmup)
        limit = TARGET_SECONDS * count / TARGET_FILES  # the quick run's smaller count gets its share
        rows.append(Row("load.generated", f"parse and validate {count:,} tool files (none kept from before)",
                        loaded, "s", parsed, "PyYAML C parser, same files", f"< {limit:g} s ({count:,} files)",
                        loaded < limit))
        rows.append(Row("load.kept", f"load {count:,} tool files found valid by a previous command "
                                     "(their checks of the machine made again)", kept, "s", parsed,
                        "PyYAML C parser, same files"))

        groups = sorted(library_groups())
        env = bench_env(home)
        library = write_project(home / "library", "http://127.0.0.1:9/v1", f"tools: {{library: [{', '.join(groups)}]}}\n")
        plain = write_project(home / "plain", "http://127.0.0.1:9/v1")
        nami = nami_command()

        def tools_list(config: Path) -> float:
            return timed(lambda: subprocess.run([*nami, "tools", "list", "--config", str(config)], cwd=config.parent,
                                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, check=True))

        for _ in range(settings.warmup):
            tools_list(library)
            tools_list(plain)
        times = interleaved({"library": lambda: tools_list(library), "plain": lambda: tools_list(plain)},
                            settings.repeat)
        rows += many_files_rows(settings, home, folder, count)
        count_library = sum(len(files) for files in library_groups().values())
        rows.append(Row("load.library", f"`nami tools list`, whole library ({count_library} tools in "
                                         f"{len(groups)} groups)", times["library"] * 1000, "ms",
                        times["plain"] * 1000, "built-ins only"))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=5)))
