"""One task, start to end, inside its worker process: a fresh workspace, setup, an agent built through the
library API (nobody can be asked: asks are denied unless approved by risk), its session recorded, the run
within the task's wall time, the checks, and the result as plain data."""

from __future__ import annotations

import os
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nami_yaml.approvals.clock import WAITS
from nami_yaml.batch.checks import RunFacts, called_tools, run_checks
from nami_yaml.batch.job import Job
from nami_yaml.batch.records import RECORDS_KEY, collect
from nami_yaml.batch.results import new_result
from nami_yaml.batch.workspace import (
    WorkspaceError,
    command_env,
    command_sandbox,
    make_workspace,
    remove_workspace,
    run_command,
)
from nami_yaml.errors import NamiError
from nami_yaml.runners.sandbox.plan import SandboxPlan

STOP_GRACE = 5.0  # after a cancel, how long the run gets to stop by itself (killing its tools) and report


class TaskRun:
    def __init__(self, job: Job, cwd: Path, *, on_started: Callable[[str], None] | None = None):
        self.job = job.resolved(cwd)
        self.task = self.job.task
        self.on_started = on_started
        self.started = time.monotonic()
        self.deadline = self.started + self.job.task_wall_time
        self.stopping = threading.Event()  # SIGTERM: the batch is stopping
        self.cancel = threading.Event()  # for setup and check commands: stopping or out of time
        self.agent: Any = None
        self.project: Any = None
        self.options: Any = None
        self.session_path: Path | None = None
        self.prompts: list[str] = []  # a replay task's recorded turns (else its prompt)
        self.result = new_result(self.job.task_id)

    # -- control ----------------------------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()
        self.cancel.set()
        if self.agent is not None:
            self.agent.cancel()

    def _watch_wall_time(self, finished: threading.Event) -> None:
        """Cancel the task once its wall time is spent (waits for approvals not counted)."""
        while not finished.wait(timeout=min(1.0, max(0.01, self.remaining()))):
            if self.remaining() <= 0:
                self.cancel.set()
                return

    def remaining(self) -> float:
        # A wait for a person's answer from the approvals queue does not count against the wall time.
        return self.deadline + WAITS.waited() - time.monotonic()

    # -- the task ---------------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        env = {**os.environ, **self.job.env, **(self.task.get("env") or {})}
        folder: Path | None = None
        finished = threading.Event()
        # Not one timer for the wall time: the deadline moves while the task waits for an approval.
        timer = threading.Thread(target=self._watch_wall_time, args=(finished,), name="nami-batch-wall-time",
                                 daemon=True)
        timer.start()
        try:
            folder = make_workspace(self.job.task_id, self.task.get("workspace"), Path(self.job.base),
                                    scratch=Path(self.job.scratch) if self.job.scratch else None, env=env,
                                    timeout=self.remaining(), cancel=self.cancel)
            if self.job.keep_workspace:
                self.result["workspace"] = str(folder)
            project = self._project(folder, env)  # before setup: a configuration error fails here, first
            commands_env = command_env(project.context, self.task.get("env") or {})
            if self._setup(folder, commands_env, command_sandbox(project.context, setup=True)):
                self._run(project, folder, commands_env)
        except WorkspaceError as exc:
            self._end(self._stopped_status() or "setup_failed", f"workspace: {exc}")
        except NamiError as exc:  # the configuration cannot be used: the same for every task, most likely
            self._end("error", str(exc))
        except Exception as exc:  # a bug of ours: reported with the task, the batch goes on
            self._end("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")
        finally:
            finished.set()
            if self.agent is not None:
                self.agent.close()
                if self.job.bring_back and self.session_path is not None:
                    self.result[RECORDS_KEY] = self._records(self.agent, self.session_path)
            if self.project is not None:
                self.project.close()  # its MCP servers: a long batch must not pile them up
            if folder is not None and not self.job.keep_workspace:
                remove_workspace(folder)
        self.result["duration_s"] = round(time.monotonic() - self.started, 3)
        return self.result

    def _stopped_status(self) -> str | None:
        if self.stopping.is_set():
            return "interrupted"
        if self.remaining() <= 0:
            return "timeout"
        return None

    def _end(self, status: str, error: str | None) -> None:
        self.result["status"] = status
        self.result["error"] = error
        self.result["passed"] = False

    def _setup(self, folder: Path, env: dict[str, str], sandbox: SandboxPlan) -> bool:
        commands = self.task.get("setup") or []
        for number, command in enumerate(commands, start=1):
            run = run_command(command, folder, env, self.remaining(), self.cancel, sandbox=sandbox)
            if not run.ok:
                stopped = self._stopped_status()
                what = f"setup command {number} of {len(commands)}: {run.describe()}"
                self._end(stopped or "setup_failed", what if not stopped else f"during {what}")
                return False
        return True

    def _options(self, folder: Path, env: dict[str, str]) -> Any:
        from nami_yaml.app.options import AgentOptions

        project = self.job.project
        limits = self.task.get("limits") or {}
        settings = {**project.flags, "workspace": str(folder), "limits.max_steps": limits.get("max_steps"),
                    "limits.max_cost": limits.get("max_cost"), "limits.schema_retries": limits.get("schema_retries")}
        # Nobody can be asked here (approve=None): asks are denied unless approved by risk, or wait on the
        # approvals queue where agent.yaml says approvals.via: queue (app/approval_route.py). An agent.yaml found
        # upwards must already be trusted on this machine (the batch asked, and recorded it, before
        # starting), so one changed since is refused (trust=None), not run. Its MCP servers start after
        # the task's setup commands, in its workspace (start_servers=False, then _run).
        return AgentOptions(config=project.config, cwd=project.folder, env=env, settings=settings,
                            tools=list(project.tools), trust=None, approve=None,
                            approve_risks=self.job.approve_risks, via="batch", start_servers=False,
                            record_session=True, agent=self.task.get("agent"), target=self.task.get("target"),
                            answer_schema=self.task.get("answer_schema"), replay=self._replay(),
                            trace_link=self.job.trace or None)

    def _replay(self) -> Any:
        """A ``replay:`` task's recorded session (relative to the task file): its turns are the prompts,
        its results serve the calls (app/replay.py). SessionError ends the task as an error."""
        if not self.task.get("replay"):
            return None
        from nami_yaml.app.replay import ReplaySource
        from nami_yaml.session.loader import load_session
        from nami_yaml.session.replay import Recording

        recording = Recording.of(load_session(Path(self.job.base) / self.task["replay"]))
        self.prompts = recording.turns
        return ReplaySource(recording)

    def _project(self, folder: Path, env: dict[str, str]) -> Any:
        from nami_yaml.app.project import open_project

        self.options = self._options(folder, env)
        options = self.options
        project = open_project(options.request(), trust=options.trust, will_run=True,
                               tool_servers=options.start_servers)
        self.project = project
        self.result["model"] = project.settings.model.name
        return project

    def _run(self, project: Any, folder: Path, commands_env: dict[str, str]) -> None:
        from nami_yaml.app.agent import build_agent

        project.start_servers()  # its MCP servers, in this task's workspace, after its setup commands
        self.agent = agent = build_agent(self.options, project)
        self.result["session"], self.session_path = agent.session_id, agent.session_file
        if self.on_started is not None:
            self.on_started(agent.session_id)
        if self.stopping.is_set():
            agent.cancel()
        outcome = self._run_agent(agent)
        if outcome is None:  # it did not stop in time: report what is known
            self._end(self._stopped_status() or "timeout", "the run did not stop within "
                      f"{STOP_GRACE:g} s of being cancelled")
            self._usage(agent.meter.run.to_json())
            return
        self.result.update(answer=outcome.final_text, steps=outcome.steps)
        if outcome.structured:
            self.result["answer_value"] = outcome.answer
        self._usage(outcome.totals)
        stopped = self._stopped_status() if outcome.status == "interrupted" else None
        if stopped:
            wall = self.job.task_wall_time
            self._end(stopped, f"wall time of {wall:g} s reached" if stopped == "timeout" else "batch stopped")
            return
        self.result["status"] = outcome.status
        self.result["error"] = outcome.error
        checks = self.task.get("checks") or []
        facts = RunFacts(outcome.final_text, called_tools(outcome.messages), folder, commands_env, self.remaining,
                         self.cancel, *answer_value(outcome), sandbox=command_sandbox(project.context, setup=False))
        self.result["checks"] = run_checks(checks, facts)
        stopped = self._stopped_status()
        if stopped:
            self._end(stopped, "wall time reached during the checks" if stopped == "timeout" else "batch stopped")
            return
        self.result["passed"] = outcome.status == "answered" and all(c["passed"] for c in self.result["checks"])

    def _run_agent(self, agent: Any) -> Any:
        """Run the prompt in a thread, so the wall time and a stop can cancel it from here."""
        box: list[Any] = []
        def run_turns() -> None:
            for prompt in self.prompts or [self.task["prompt"]]:  # a replay's turns in order, else the prompt
                box.append(agent.run(prompt))
                if box[-1].status != "answered":
                    break

        thread = threading.Thread(target=run_turns,
                                  name="nami-batch-run", daemon=True)
        thread.start()
        while thread.is_alive() and not self.cancel.is_set():
            thread.join(timeout=min(0.5, max(0.01, self.remaining())))
            if self.remaining() <= 0:
                self.cancel.set()
        if thread.is_alive():
            agent.cancel()
            thread.join(timeout=STOP_GRACE)
        return box[-1] if box else None

    def _usage(self, totals: dict[str, Any]) -> None:
        totals = dict(totals or {})
        self.result["cost"] = totals.pop("cost", None)
        totals.pop("cost_complete", None)
        self.result["steps"] = totals.pop("steps", None) or self.result["steps"]
        self.result["usage"] = totals

    def _records(self, agent: Any, session_path: Path) -> dict[str, Any]:
        from nami_yaml.policy.audit import configured_path

        audit = configured_path(agent.settings.audit.path)
        return collect(agent.session_id, session_path, audit)


def answer_value(outcome: Any) -> tuple[Any, str | None]:
    """The answer as a JSON value for answer_field checks, or None and why there is none."""
    from nami_yaml.app.answers import read_answer

    if outcome.structured:
        return (outcome.answer, None) if outcome.status == "answered" else (None, "no answer matched the schema")
    try:
        return read_answer(outcome.final_text), None
    except ValueError as exc:
        return None, str(exc)
