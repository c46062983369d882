"""Start-up: wall time of `nami --help`, `nami tools list` and `nami check` in a small project, against
`python -c pass` and `python -c "import openai"`; and, from `python -X importtime`, that none of these
paths imports openai (the SDK alone costs more than all of nami's own start-up).

    python -m bench.startup
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.common import Row, Settings, bench_env, interleaved, nami_command, scratch, timed, write_project

COMMANDS = {"help": ["--help"], "tools_list": ["tools", "list"], "check": ["check"]}


def imported_modules(args: list[str], cwd: Path, env: dict[str, str]) -> set[str]:
    """The top-level packages `python -X importtime -m nami_yaml ARGS` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "nami_yaml", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name.split(".")[0])
    return names


def measure(settings: Settings) -> list[Row]:
    with scratch() as home:
        project = home / "project"
        write_project(project, "http://127.0.0.1:9/v1")  # never contacted: none of these makes a request
        env = bench_env(home)
        nami = nami_command()

        def launch(command: list[str]) -> float:
            return timed(lambda: subprocess.run(command, cwd=project, env=env, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True))

        commands = {"pass": [sys.executable, "-c", "pass"], "openai": [sys.executable, "-c", "import openai"]}
        commands.update({name: [*nami, *args] for name, args in COMMANDS.items()})
        for command in list(commands.values()) * settings.warmup:  # the page cache and the .pyc files
            launch(command)
        times = interleaved({name: (lambda c=command: launch(c)) for name, command in commands.items()},
                            settings.repeat)
        rows = [Row("startup.python", "`python -c pass`", times["pass"] * 1000, "ms"),
                Row("startup.openai", '`python -c "import openai"`', times["openai"] * 1000, "ms",
                    times["pass"] * 1000, "`python -c pass`")]
        for name, args in COMMANDS.items():
            command = f"`nami {' '.join(args)}`"
            rows.append(Row(f"startup.{name}", f"{command}", times[name] * 1000, "ms",
                            times["openai"] * 1000, '`import openai`', "< `import openai`",
                            times[name] < times["openai"]))
            rows.append(Row(f"startup.{name}.vs_python", f"{command} against bare Python", times[name] * 1000,
                            "ms", times["pass"] * 1000, "`python -c pass`"))
        for name, args in COMMANDS.items():
            found = imported_modules(args, project, env)
            clean = "openai" not in found and "nami_yaml" in found
            rows.append(Row(f"startup.{name}.no_openai", f"`nami {' '.join(args)}` imports openai (importtime)",
                            0 if clean else 1, "yes/no", target="no", met=clean))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=10)))
