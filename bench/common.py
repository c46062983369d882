"""What every benchmark section shares: the row of the table, medians of repeated runs, a scratch
project pointed at the fake server, and running nami as a user does (a fresh process)."""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    """One line of the table: nami's figure, the baseline measured in the same run, and the ratio."""

    key: str  # stable name: the CI test checks that every key is present
    label: str
    value: float | None  # None: not measured here (the label says why); never a figure standing in for one
    unit: str  # "ms", "s", "MB", "chars", "%", "tasks/min", …
    baseline: float | None = None
    baseline_label: str = ""
    target: str = ""  # e.g. "< 0.5 s"; empty when the issue sets none
    met: bool | None = None  # None: no target

    @property
    def ratio(self) -> float | None:
        if self.value is None or self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def problem(self) -> str | None:
        """Why a figure cannot be true (a negative time, a share over 100 %), or None. Such a figure is an
        error of the measurement, never a target met."""
        for what, value in (("figure", self.value), ("baseline", self.baseline)):
            if value is None:
                continue
            if not math.isfinite(value):
                return f"the {what} is {value}"
            if self.unit in POSITIVE_UNITS and value <= 0:
                return f"the {what} is {value:g} {self.unit}, which cannot be"
            if self.unit == "%" and not 0 <= value <= 100:
                return f"the {what} is {value:g} %, outside 0-100"
            if self.unit == "yes/no" and value not in (0, 1):
                return f"the {what} is {value:g}, neither yes nor no"
        return None


class BenchError(Exception):
    """A measurement came out impossible: the benchmark failed, whatever the targets say."""


# Units in which nothing real is zero or less: a time, a size, a rate, a count of characters.
POSITIVE_UNITS = frozenset({"ms", "s", "MB", "tasks/min", "chars", "tokens"})


@dataclass
class Settings:
    quick: bool  # the CI subset: small sizes, one repeat; every row still present
    repeat: int
    base: str = "HEAD~1"  # the revision the `against` section measures this checkout against (--base)

    def size(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    @property
    def warmup(self) -> int:
        """Runs before the timed ones (page cache, .pyc files); none in the quick subset."""
        return 0 if self.quick else 1


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median_time(action: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """Median wall time of ``action`` in seconds; the warm-up runs fill the page cache first."""
    for _ in range(warmup):
        action()
    return median([timed(action) for _ in range(repeat)])


def interleaved(actions: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Median of each action's own figure, the actions taking turns in every round, so that a burst of
    noise from elsewhere on the machine hits all of them rather than one."""
    return {name: median(values) for name, values in turns(actions, repeat).items()}


Figure = TypeVar("Figure")


def turns(actions: dict[str, Callable[[], Figure]], repeat: int, *, alternate: bool = False) -> dict[str, list[Figure]]:
    """Each action's figures, the actions taking turns in every round. ``alternate``: every other round runs
    them in reverse order (A B, B A, …), so that none always goes first (after a pause) or last."""
    samples: dict[str, list[Figure]] = {name: [] for name in actions}
    for round_ in range(repeat):
        order = list(actions.items())
        for name, action in reversed(order) if alternate and round_ % 2 else order:
            samples[name].append(action())
    return samples


def nami_command() -> list[str]:
    """The installed `nami` script next to this Python (what a user types), else `python -m nami_yaml`."""
    script = Path(sys.executable).with_name("nami")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nami_yaml"]


def bench_env(home: Path) -> dict[str, str]:
    """An environment that keeps sessions, the audit log and trust inside ``home`` and sends no key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAMI_", "DEEPSEEK_", "OPENAI_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
               XDG_CONFIG_HOME=str(home / "config"), NAMI_API_KEY="bench", NO_COLOR="1", TERM="xterm-256color",
               PYTHONDONTWRITEBYTECODE="1")
    return env


@contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="nami-bench-") as name:
        yield Path(name)


def write_project(folder: Path, base_url: str, extra: str = "") -> Path:
    """An agent.yaml for the fake model; named with --config, so it needs no trust."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "agent.yaml"
    config.write_text(f"model: {{provider: custom, name: fake-model, base_url: '{base_url}'}}\n{extra}")
    return config


def run(command: list[str], cwd: Path, env: dict[str, str], *, check: bool = True,
        stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, stdin=stdin, timeout=600)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def machine() -> dict[str, str]:
    """The machine the figures come from, as the table's header shows it."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 ** 2:.1f} GiB"
    except OSError:
        pass
    try:
        sdk = importlib.metadata.version("openai")
    except importlib.metadata.PackageNotFoundError:
        sdk = "not installed"
    return {
        "CPU": f"{cpu}, {os.cpu_count()} logical cores",
        "RAM": memory or "unknown",
        "OS": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "openai SDK": sdk,
        "ripgrep": "yes" if shutil.which("rg") else "no",
    }
