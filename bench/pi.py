"""Pi's request weight, measured live: Pi (the coding agent, from npm) installed into the benchmark's cache
folder, pointed at the fake server through a models.json provider, asked one question non-interactively;
its first request is what it sends before any conversation: the system prompt and the tool definitions,
counted the way nami's own are (characters as sent, each definition as compact JSON).

    python -m bench.pi            # installs Pi if npm is there, then prints what its first request weighs

Without npm, or when the install or the run fails, the answer is why it was not measured: never a
constant in place of a measurement. The cache is $NAMI_BENCH_CACHE, else $XDG_CACHE_HOME/nami-bench, else
~/.cache/nami-bench: never the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.session.context import Part, request_parts, total_chars
from nami_yaml.testing import FakeOpenAIServer, text

PACKAGE = "@mariozechner/pi-coding-agent"
VERSION = "0.73.1"  # pinned: another version weighs differently
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 120


@dataclass(frozen=True)
class PiWeight:
    """What Pi's first request carries besides the user's message."""

    version: str
    system_prompt: int  # characters
    tools: list[Part]  # one per tool definition, largest first

    @property
    def tool_chars(self) -> int:
        return total_chars(self.tools)

    @property
    def total(self) -> int:
        return self.system_prompt + self.tool_chars


@dataclass(frozen=True)
class NotMeasured:
    why: str


def cache_folder(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ if env is None else env)
    if env.get("NAMI_BENCH_CACHE"):
        return Path(env["NAMI_BENCH_CACHE"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "nami-bench"
    return (Path(env["HOME"]) if env.get("HOME") else Path.home()) / ".cache" / "nami-bench"


def installed(cache: Path) -> Path | None:
    program = cache / f"pi-{VERSION}" / "node_modules" / ".bin" / "pi"
    return program if program.exists() else None


def install(cache: Path) -> Path | NotMeasured:
    """``npm install`` of the pinned Pi into the cache: into a folder of its own first, renamed when
    complete, so a failed or interrupted install is never taken for an installed Pi."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return NotMeasured("npm is not installed")
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"pi-{VERSION}.partial-", dir=cache))
    try:
        done = subprocess.run([npm, "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--no-save",
                               "--loglevel=error", f"{PACKAGE}@{VERSION}"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        return NotMeasured(f"npm install of {PACKAGE}@{VERSION} took over {INSTALL_TIMEOUT} s")
    if done.returncode != 0 or not (partial / "node_modules" / ".bin" / "pi").exists():
        shutil.rmtree(partial, ignore_errors=True)
        return NotMeasured(f"npm install of {PACKAGE}@{VERSION} failed: {_last_line(done.stderr or done.stdout)}")
    final = cache / f"pi-{VERSION}"
    try:
        partial.rename(final)
    except OSError:  # another run installed it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    return installed(cache) or NotMeasured(f"the install in {final} has no pi command")


def first_request(program: list[str], *, timeout: float = RUN_TIMEOUT) -> PiWeight | NotMeasured:
    """Run ``program`` (Pi's command) once against the fake server and weigh its first request."""
    with tempfile.TemporaryDirectory(prefix="nami-bench-pi-") as name, \
            FakeOpenAIServer(responder=lambda body: text("done")) as server:
        home = Path(name)
        agent, work = home / "agent", home / "work"
        agent.mkdir()
        work.mkdir()
        # A custom OpenAI-compatible provider (Pi's docs/models.md); the key is required and ignored here.
        (agent / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": server.base_url, "api": "openai-completions", "apiKey": "bench",
            "models": [{"id": "fake-model"}]}}}))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent),
               "PI_OFFLINE": "1", "NO_COLOR": "1"}  # offline: no update check or install ping at start
        try:
            done = subprocess.run([*program, "--offline", "--provider", "fake", "--model", "fake-model",
                                   "--no-session", "-p", "Say hello."], cwd=work, env=env, capture_output=True,
                                  text=True, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return NotMeasured(f"pi did not answer within {timeout:g} s")
        except OSError as exc:
            return NotMeasured(f"pi could not start: {exc.strerror or exc}")
        if not server.requests:
            return NotMeasured(f"pi sent no request (exit {done.returncode}: {_last_line(done.stderr)})")
        body = dict(server.requests[0])
    system = next((m.get("content") for m in body.get("messages") or []
                   if isinstance(m, dict) and m.get("role") in ("system", "developer")), None)
    if not isinstance(system, str):
        return NotMeasured("pi's first request has no system prompt as text")
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    parts = request_parts(system, tools)
    return PiWeight(VERSION, len(system), [p for p in parts if p.label != "system prompt"])


def measure_pi(*, may_install: bool, env: dict[str, str] | None = None) -> PiWeight | NotMeasured:
    """Pi's weight; installs Pi first when it is not in the cache and ``may_install``."""
    cache = cache_folder(env)
    program = installed(cache)
    if program is None:
        if not may_install:
            return NotMeasured(f"Pi {VERSION} is not in {cache} and quick runs do not install it; a full run does")
        found = install(cache)
        if isinstance(found, NotMeasured):
            return found
        program = found
    return first_request([str(program)])


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def main() -> None:
    weight = measure_pi(may_install=True)
    if isinstance(weight, NotMeasured):
        print(f"Pi: not measured ({weight.why})")
        return
    print(f"Pi {weight.version}: system prompt {weight.system_prompt:,} chars, "
          f"{len(weight.tools)} tools {weight.tool_chars:,} chars, total {weight.total:,} chars")
    for part in weight.tools:
        print(f"  {part.label:<20} {part.chars:>6,}")


if __name__ == "__main__":
    main()
