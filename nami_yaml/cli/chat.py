"""``nami chat``: a conversation with the agent, with a few /commands, on a terminal or from a pipe."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from nami_yaml.app.agent import Agent
from nami_yaml.cli.common import handle_errors
from nami_yaml.cli.completion import complete_session_ids
from nami_yaml.cli.lineinput import LineReader
from nami_yaml.cli.render import HumanRenderer
from nami_yaml.cli.run import agent_options, build_agent, force_option, human_renderer
from nami_yaml.display import plural, visible
from nami_yaml.errors import NamiError
from nami_yaml.registry.registry import Registry

COMMANDS = {
    "/help": "this help",
    "/tools": "the tools the agent has",
    "/clear": "forget the conversation (keeps the system prompt)",
    "/model": "NAME: talk to another model on the same endpoint from the next message on",
    "/cost": "tokens and cost of this session so far",
    "/save": "[FILE]: where this session is saved and how to continue it; FILE: also export it as one web page",
    "/exit": "leave (also /quit, exit, quit, Ctrl-D, or Ctrl-C twice at an empty prompt)",
}
ALIASES = {"/quit": "/exit", "exit": "/exit", "quit": "/exit"}

KEYS = """\
Keys:
  Enter            send
  Alt-Enter        a new line (so does a line ending in \\); pasted text keeps its lines
  Tab              complete /commands and tool names
  Ctrl-C           stop the answer or the tool running; at an empty prompt twice: leave
  Ctrl-D           leave"""


def chat_help(prompts: Mapping[str, Any] | None = None) -> str:
    width = max(len(name) for name in COMMANDS) + 2
    lines = ["Commands:"] + [f"  {name:<{width}} {text}" for name, text in COMMANDS.items()]
    if prompts:  # an MCP server's prompts: /SERVER:PROMPT name=value ... sends its text as your message
        lines.append("MCP prompts (/SERVER:PROMPT name=value ...):")
        for name, prompt in prompts.items():
            wanted = " ".join(f"{a.name}=…" for a in prompt.arguments or ())
            lines.append(f"  /{name} {wanted}".rstrip() + (f"  {prompt.description}" if prompt.description else ""))
    return "\n".join(lines) + "\n" + KEYS


def tool_count(registry: Registry) -> str:
    """``35 tools``, or with groups sent on demand ``35 tools (11 sent up front; git, kubectl on demand)``:
    the model gets a group's definitions only once it loads them (load_tools)."""
    total = plural(len(registry), "tool")
    groups = registry.groups()
    if not groups:
        return total
    return f"{total} ({len(registry.definitions())} sent up front; {', '.join(groups)} on demand)"


RECAP_WIDTH = 100


def recap_lines(session_id: str, messages: list[dict[str, Any]], width: int = RECAP_WIDTH) -> list[str]:
    """``nami chat --resume``'s recap: the session, the earlier turns' count, the last question and answer."""
    asked = [m for m in messages if m.get("role") == "user"]
    if not asked:
        return [f"resuming session {session_id}: no messages yet"]
    answers = [m for m in messages[messages.index(asked[-1]):]
               if m.get("role") == "assistant" and _text(m.get("content"))]
    earlier = len(asked) - 1
    lines = [f"resuming session {session_id} ({plural(earlier, 'earlier turn')} before the last):",
             f"  you:  {_cut(_text(asked[-1].get('content')), width)}"]
    lines.append(f"  nami: {_cut(_text(answers[-1].get('content')), width)}" if answers else "  nami: (no answer yet)")
    return lines


def _text(content: Any) -> str:
    if isinstance(content, list):  # parts: keep the text ones
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return " ".join(str(content or "").split())


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


@click.command("chat")
@agent_options
@click.option("--resume", is_flag=False, flag_value="", default=None, metavar="[ID]",
              shell_complete=complete_session_ids,
              help="Continue a saved session: ID (or its start), else the latest of this workspace.")
@force_option
@handle_errors
def chat(color: str, plain: bool, verbose: bool, quiet: bool, **options: Any) -> None:
    """Talk with the agent; the conversation carries across turns."""
    renderer = human_renderer(color, plain, verbose, quiet, live_stdout=True)
    agent = build_agent(on_event=renderer, via="chat", pause=renderer.status, answer_schema=False, **options)
    renderer.tokens = lambda: agent.meter.run.tokens
    session = Chat(agent, renderer)
    if agent.resumed is not None:
        session.recap()
    session.loop()


class Chat:
    def __init__(self, agent: Agent, renderer: HumanRenderer):
        self.agent = agent
        self.renderer = renderer
        self.paint = renderer.term.err
        self.reader = LineReader(complete=self.complete)
        self.handlers: dict[str, Callable[[str], None]] = {
            "/help": lambda _: click.echo(chat_help(self.mcp_prompts())),
            "/tools": self.tools,
            "/clear": self.clear,
            "/model": self.model,
            "/cost": self.cost,
            "/save": self.save,
        }

    def say(self, text: str, *styles: str) -> None:
        """A note for the user on stderr (stdout holds the conversation)."""
        click.echo(self.paint(visible(text), *styles), err=True)

    def recap(self) -> None:
        """Where a resumed conversation stands: its last question and answer (cut short), and how many
        turns came before them."""
        assert self.agent.resumed is not None
        for line in recap_lines(self.agent.resumed.id, self.agent.messages):
            self.say(line, "dim")

    def loop(self) -> None:
        try:
            if self.reader.interactive:
                self.greet()
            prompt = self.prompt()
            while True:
                text = self.reader.read(prompt)
                if text is None:
                    break
                text = text.strip()
                if not text:
                    continue
                command, _, argument = text.partition(" ")
                command = ALIASES.get(command, command)
                if command == "/exit":
                    break
                if command in self.handlers:
                    self.handlers[command](argument.strip())
                elif command[1:] in self.mcp_prompts():
                    self.use_prompt(command[1:], argument)
                elif command.startswith("/") and "\n" not in command:
                    self.say(f"unknown command {command}; commands: {' '.join(COMMANDS)}", "yellow")
                else:
                    self.turn(text)
        finally:
            self.renderer.close()
            self.reader.close()

    def greet(self) -> None:
        model = self.agent.settings.model.name
        self.say(f"nami chat · {model} · {tool_count(self.agent.registry)} · session {self.agent.session_id}", "bold")
        self.say("/help for commands · Enter sends · Alt-Enter adds a line · Ctrl-D leaves", "dim")

    def prompt(self) -> str:
        if not self.paint.enabled:
            return "› "
        # \001 and \002 tell readline the colour codes between them take no room on the line.
        return "\001\x1b[1;36m\002›\001\x1b[0m\002 "

    # -- a turn ---------------------------------------------------------------------------------------

    def mcp_prompts(self) -> dict[str, Any]:
        servers = getattr(self.agent.project.servers, "servers", None)
        return servers.prompts() if servers is not None else {}

    def use_prompt(self, name: str, argument: str) -> None:
        """/SERVER:PROMPT name=value ...: the server's prompt, filled in, sent as the person's message."""
        try:
            words = shlex.split(argument)
        except ValueError as exc:
            self.say(f"/{name}: {exc}", "yellow")
            return
        values = dict(word.split("=", 1) for word in words if "=" in word)
        if len(values) != len(words):
            self.say(f"/{name}: give arguments as name=value", "yellow")
            return
        server, _, prompt = name.partition(":")
        reply = self.agent.project.servers.servers.get_prompt(server, prompt, values)
        if not reply.ok:
            self.say(reply.text, "yellow")
            return
        self.turn(reply.text)

    def turn(self, text: str) -> None:
        self.renderer.begin()
        try:
            outcome = self.agent.run(text)
        except KeyboardInterrupt:  # between the loop's own handling and here
            outcome = None
        finally:
            if self.renderer.status is not None:
                self.renderer.status.hide()
        if outcome is None or outcome.status == "interrupted":
            self.say("(interrupted)", "yellow")
            self.reader.armed = True  # a Ctrl-C at the empty prompt now leaves
        elif outcome.status == "answered":
            self.renderer.answer(outcome.final_text)
            if outcome.error:
                self.say(f"nami: {outcome.error}", "yellow")
        elif outcome.status != "error":  # model errors were already shown by the renderer
            more = {"max_steps": " Send another message to let it go on, or raise the step limit.",
                    "max_cost": " Raise limits.max_cost, then send another message to let it go on."
                    }.get(outcome.status, "")
            self.say(f"nami: {outcome.error}{more}", "red")
        if self.reader.interactive:
            click.echo(err=True)  # a blank line between one turn and the next prompt

    # -- commands -------------------------------------------------------------------------------------

    def tools(self, _: str) -> None:
        from nami_yaml.cli.tools import first_sentence

        for tool in self.agent.registry:
            click.echo(visible(f"{tool.name:<16} {tool.risk:<5} {first_sentence(tool.description)}"))

    def clear(self, _: str) -> None:
        self.agent.reset()
        self.say("(conversation cleared)", "dim")

    def model(self, name: str) -> None:
        if not name:
            self.say(f"model: {self.agent.settings.model.name} (/model NAME to change it)")
            return
        try:
            self.agent.use_model(name)
        except NamiError as exc:
            self.say(f"nami: {exc}", "red")
            return
        priced = "" if self.agent.pricing is not None else " (no price known: costs are not counted for it)"
        self.say(f"model: {name} from the next message on{priced}")

    def cost(self, _: str) -> None:
        from nami_yaml.session.show import format_totals

        click.echo(f"session {self.agent.session_id}: {format_totals(self.agent.meter.session)}")

    def save(self, target: str) -> None:
        path = self.agent.session_file
        if path is None or not path.exists():
            self.say("nothing to save yet: the session is saved from your first message on")
            return
        session_id = self.agent.session_id
        self.say(f"session {session_id} is saved as it goes ({path}); continue it with "
                 f"`nami chat --resume {session_id}`")
        if not target:
            return
        from nami_yaml.session.export import export_html
        from nami_yaml.session.loader import load_session

        try:
            export_html(load_session(path), Path(target).expanduser())
        except (NamiError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.say(f"nami: cannot write {target}: {reason}", "red")
            return
        self.say(f"wrote {target} (the conversation as one web page)")

    # -- completion -----------------------------------------------------------------------------------

    def complete(self, text: str, line: str) -> Iterable[str]:
        """/commands at the start of the line, tool names after /tools and anywhere in a message."""
        words = line.split()
        if line.startswith("/") and (len(words) <= 1 and not line.endswith(" ")):
            return [name for name in (*COMMANDS, "/quit") if name.startswith(text)]
        if words and words[0] == "/model":
            current = str(self.agent.settings.model.name or "")
            return [current] if current.startswith(text) else []
        if words and words[0] in ("/save", "/clear", "/cost", "/help", "/exit"):
            return []
        if not text:
            return []
        return [tool.name for tool in self.agent.registry if tool.name.startswith(text)]
