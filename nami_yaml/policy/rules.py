"""Rules from agent.yaml (or the user config): a decision for the calls whose tool name and argument
values match. Within one file the strictest matching rule wins; ``layers.py`` combines the files.

Each rule carries its position (``rule agent.yaml:14:5``): it is the decision's source, so it reaches the
model (for a deny), the person asked, the approval event and the audit line.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.agent.hooks import Action, Decision, strictest
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.config.effective import ConfigFile
from nami_yaml.errors import Problem
from nami_yaml.policy.matchers import Matcher, MatcherError, compile_matcher, condition_holds
from nami_yaml.registry.registry import Registry
from nami_yaml.shell.bash import Analysis, SimpleCommand, analysed, prefix_words
from nami_yaml.shell.command_risks import command_problem
from nami_yaml.shell.hidden import hidden_reason, names_in
from nami_yaml.shell.plain import not_plain, read_plainly
from nami_yaml.spec.validate import did_you_mean

BASH = "bash"


@dataclass(frozen=True)
class Rule:
    tools: tuple[str, ...]  # names or globs
    args: tuple[tuple[str, Matcher], ...]
    commands: tuple[tuple[str, ...], ...]  # bash command prefixes, as words
    decision: Action
    reason: str | None
    label: str  # "rule agent.yaml:14:5"

    def names(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools)

    def args_hold(self, arguments: dict[str, Any], workspace: Path) -> bool:
        # An allow must hold for every reading of a value; a deny or ask for any one of them.
        every = self.decision == "allow"
        return all(name in arguments and condition_holds(matcher, arguments[name], workspace, every_reading=every)
                   for name, matcher in self.args)

    def describe(self) -> str:
        what = "|".join(self.tools)
        conditions = [f"{name} {matcher.describe()}" for name, matcher in self.args]
        return what + (f" where {' and '.join(conditions)}" if conditions else "")


@dataclass
class RuleSet:
    """The rules of one file (the project's agent.yaml, or the user config)."""

    rules: list[Rule]
    origin: str  # the file, as shown in messages

    def decide(self, call: PreparedCall, workspace: Path) -> Decision | None:
        """The strictest decision of the rules matching ``call``, or None when none does."""
        relevant = [r for r in self.rules if r.names(call.name) and r.args_hold(call.arguments, workspace)]
        decisions: list[Decision | None] = [_decision(r, call) for r in relevant if not r.commands]
        command_rules = [r for r in relevant if r.commands]
        if command_rules:
            decisions.append(self._command_decision(call, command_rules))
        return strictest(decisions)

    def _command_decision(self, call: PreparedCall, rules: list[Rule]) -> Decision | None:
        command = call.arguments.get("command")
        if not isinstance(command, str):
            # Not the built-in bash (a project's own tool of that name, its command elsewhere): deny and ask
            # rules cannot look for their commands, so they ask rather than say nothing.
            if any(r.decision != "allow" for r in rules):
                return Decision.ask(f"{call.name} has no command string for command rules to read",
                                    f"command rules ({self.origin})")
            return None
        analysis = analysed(command)
        denied = self._denied(command, analysis, rules)
        if denied is not None:
            return denied
        for rule in (r for r in rules if r.decision == "ask"):
            hit = _hidden_match(rule, analysis)
            if hit is not None:
                prefix, seen = hit
                why = rule.reason or f"`{' '.join(prefix)}` is asked about here (found `{seen.text()}`)"
                return Decision("ask", why, rule.label)
        if analysis.opaque:
            return Decision.ask(f"{analysis.opaque}, so command rules cannot tell what it runs",
                                f"command rules ({self.origin})")
        allowing = [r for r in rules if r.decision == "allow"]
        labels: list[str] = []
        for simple in analysis.commands:
            rule = next((r for r in allowing if any(_allows(simple, p) for p in r.commands)), None)
            if rule is None:
                return None  # a part no rule allows: the other rules, or the defaults, decide
            if rule.label not in labels:
                labels.append(rule.label)
        reasons = [r.reason for r in allowing if r.label in labels and r.reason]
        return Decision.allow("; ".join(reasons) or None, _join_labels(labels))

    @staticmethod
    def _denied(command: str, analysis: Analysis, rules: list[Rule]) -> Decision | None:
        """A deny is absolute (nothing approves it), so a line is denied wherever a deny rule could match
        it: the denied prefix in any command in sight (a computed word may be any words); or, in a line
        nami cannot read as plainly what it says, a program it cannot name, or the denied word anywhere."""
        denying = [r for r in rules if r.decision == "deny"]
        for rule in denying:
            hit = _hidden_match(rule, analysis)
            if hit is not None:
                prefix, seen = hit
                why = rule.reason or f"`{' '.join(prefix)}` is denied here (found `{seen.text()}`)"
                return Decision("deny", why, rule.label)
        if not denying or _plain_line(analysis):
            return None
        rule = denying[0]
        hidden = hidden_reason(command)
        if hidden is not None:
            denied = "`" + "`, `".join(" ".join(p) for p in rule.commands) + "`"
            why = f"{hidden}, so it could run {denied}, which is denied here"
            return Decision("deny", f"{rule.reason} ({why})" if rule.reason else why, rule.label)
        names = names_in(command)
        for rule in denying:
            for prefix in rule.commands:
                if names_in(" ".join((os.path.basename(prefix[0]), *prefix[1:]))) <= names:
                    why = (f"`{' '.join(prefix)}` is denied here, and this line names it where nami cannot tell "
                           "whether it runs it (the line is not plainly what it says)")
                    return Decision("deny", f"{rule.reason} ({why})" if rule.reason else why, rule.label)
        return None


def _plain_line(analysis: Analysis) -> bool:
    """Simple commands of literal words, each read whole by a table of inert options."""
    return not analysis.opaque and all(read_plainly(c.words) for c in analysis.commands)


def _decision(rule: Rule, call: PreparedCall) -> Decision:
    reason = rule.reason
    if reason is None and rule.decision != "allow":
        verb = "denies" if rule.decision == "deny" else "asks about"
        reason = f"a rule {verb} {rule.describe()}"
    return Decision(rule.decision, reason, rule.label)


def _allows(simple: SimpleCommand, prefix: tuple[str, ...]) -> bool:
    """An allow prefix: the same words in the same places (the command's own path included), and every
    word after them plainly what it says (an inert option, an option's value, an operand that is not code)."""
    return simple.words[: len(prefix)] == prefix and not_plain(simple.words, len(prefix)) is None


def _hidden_match(rule: Rule, analysis: Analysis) -> tuple[tuple[str, ...], SimpleCommand] | None:
    """A deny or ask prefix found in any command in sight: the same program (``/bin/rm`` is ``rm``) with
    the prefix's other words in order among its arguments (``git -C . push`` is a ``git push``)."""
    for seen in analysis.seen:
        name = seen.words[0]
        if name is None:
            continue
        for prefix in rule.commands:
            # Case-blind: on a case-insensitive file system (macOS) `RM` runs rm.
            if os.path.basename(name).lower() != os.path.basename(prefix[0]).lower():
                continue
            if _in_order(prefix[1:], seen.words[1:]):
                return prefix, seen
    return None


def _in_order(wanted: tuple[str, ...], words: tuple[str | None, ...]) -> bool:
    """``wanted`` among ``words`` in order, with only options (and the word after an option, its
    likely value) in between: ``git -C . push`` holds ``push``; ``git log --grep push`` does not. The
    options that end ``wanted`` may come anywhere after its last other word, as programs read them
    after operands too (``git commit x --amend`` is a ``git commit --amend``). A word computed when the
    line runs may be any words, so it holds the rest (``git push $f``)."""
    operands = [i for i, word in enumerate(wanted) if not word.startswith("-")]
    head, options = (wanted[: operands[-1] + 1], wanted[operands[-1] + 1:]) if operands else ((), wanted)
    index = 0
    for word in head:
        while index < len(words) and not _same_word(word, words[index]):
            if words[index] is None:
                return True
            current, previous = words[index], words[index - 1] if index else None
            is_option = current is not None and current.startswith("-")
            is_value = previous is not None and previous.startswith("-") and "=" not in previous
            if not (is_option or is_value):
                return False
            index += 1
        if index == len(words):
            return False
        index += 1
    rest = words[index:]
    return None in rest or all(any(_same_word(option, word) for word in rest) for option in options)


def _same_word(wanted: str, word: str | None) -> bool:
    """A deny or ask prefix's word as the command may spell it: a short option in a cluster (`-f` in
    `git push -uf`, `-rf` in `rm -fvr`), a long one abbreviated or with its value (`--forc`, `--force=x`)."""
    if word is None or word == wanted:
        return word is not None
    if len(wanted) > 1 and wanted[0] == "-" and wanted[1] != "-" and wanted[1:].isalnum():
        return word.startswith("-") and not word.startswith("--") and set(wanted[1:]) <= set(word[1:])
    if wanted.startswith("--") and word.startswith("--"):
        name = word.split("=", 1)[0]
        return name == wanted or (len(name) > 3 and wanted.startswith(name))
    return False


def _join_labels(labels: list[str]) -> str:
    if len(labels) == 1:
        return labels[0]
    return "rules " + ", ".join(label.removeprefix("rule ") for label in labels)


# -- loading and checking ------------------------------------------------------------------------------

def shown_path(path: Path, cwd: Path | None = None) -> str:
    """A config file as messages name it: relative below the current folder, ~/… in the home folder."""
    cwd = cwd or Path.cwd()
    home = Path(os.path.expanduser("~"))
    for base, prefix in ((cwd, ""), (home, "~/")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)


def load_rules(config: ConfigFile, registry: Registry | None, *, check_tools: bool,
               servers: Collection[str] = ()) -> tuple[RuleSet, list[Problem]]:
    """The rules of one config file, and what is wrong with them: a tool that does not exist (when
    ``check_tools``), a parameter none of the named tools has, a regex that does not compile, a command
    prefix on a tool other than bash or one that is not a plain command. Names of MCP ``servers``' tools
    (``github__*``) are not checked: a server's tools are known only once it runs."""
    origin = shown_path(config.path)
    doc = config.doc
    rules: list[Rule] = []
    problems: list[Problem] = []
    for index, data in enumerate(config.data.get("rules") or []):
        if data is None:
            continue  # left out by `nami check` for a problem already reported
        where = ("rules", index)
        line, col = doc.position(where)
        tools = (data["tool"],) if isinstance(data["tool"], str) else tuple(data["tool"])
        known = [t for t in registry if any(fnmatch.fnmatchcase(t.name, p) for p in tools)] if registry else []
        if registry is not None and check_tools:
            for position, pattern in _tool_entries(data["tool"]):
                if pattern.startswith(tuple(f"{server}__" for server in servers)):
                    continue
                if not any(fnmatch.fnmatchcase(t.name, pattern) for t in registry):
                    problems.append(doc.problem((*where, "tool", *position),
                                                f"no tool is named {pattern!r}{_known_names(registry, pattern)}"))
        args: list[tuple[str, Matcher]] = []
        for name, spec in (data.get("args") or {}).items():
            if known and not any(name in t.argument_names() for t in known):
                params = sorted({p for t in known for p in t.argument_names()})
                problems.append(doc.problem((*where, "args", name), f"{'/'.join(tools)} has no parameter {name!r} "
                                            f"(its parameters: {', '.join(params) or 'none'})", key=True))
            try:
                args.append((name, compile_matcher(spec)))
            except MatcherError as exc:
                problems.append(doc.problem((*where, "args", name, *exc.path), str(exc)))
        commands, command_problems = _commands(data, where, doc)
        problems.extend(command_problems)
        rules.append(Rule(tools, tuple(args), commands, data["decision"], data.get("reason"),
                          f"rule {origin}:{line}:{col}"))
    return RuleSet(rules, origin), problems


def _commands(data: dict[str, Any], where: tuple[str | int, ...], doc: Any) -> tuple[tuple[tuple[str, ...], ...], list[Problem]]:
    if "command" not in data:
        return (), []
    problems: list[Problem] = []
    if any(pattern != BASH for _, pattern in _tool_entries(data["tool"])):
        problems.append(doc.problem((*where, "command"), "command prefixes apply to the bash tool only: "
                                    "give tool: bash (use args: for other tools)", key=True))
    entries = [((), data["command"])] if isinstance(data["command"], str) else \
        [((i,), text) for i, text in enumerate(data["command"])]
    commands = []
    for position, text in entries:
        words = prefix_words(text)
        if isinstance(words, str):
            problems.append(doc.problem((*where, "command", *position), f"{text!r} is not a plain command: {words}"))
            continue
        if data["decision"] == "allow":
            problem = command_problem(words)
            if problem:
                problems.append(doc.problem((*where, "command", *position),
                                            f"an allow rule cannot allow {text!r}: {problem}, so it is always asked about"))
                continue
        commands.append(words)
    return tuple(commands), problems


def denied_programs(config: ConfigFile) -> list[str]:
    """The programs the bash rules of ``config`` deny by name alone (``command: [rm]``, not ``git push``):
    the sandbox of a bash call masks them (runners/sandbox/masks.py), so no spelling runs them. A rule's
    conditions on other arguments do not narrow it: every bash call gets the mask."""
    found: list[str] = []
    for data in config.data.get("rules") or []:
        if not isinstance(data, dict) or data.get("decision") != "deny" or "command" not in data:
            continue
        tools = data.get("tool")
        if not any(fnmatch.fnmatchcase(BASH, t) for t in ([tools] if isinstance(tools, str) else tools or [])
                   if isinstance(t, str)):
            continue
        texts = data["command"] if isinstance(data["command"], list) else [data["command"]]
        for text in (t for t in texts if isinstance(t, str)):
            words = prefix_words(text)
            if not isinstance(words, str) and len(words) == 1:
                found.append(words[0])
    return found


def _tool_entries(tool: str | list[str]) -> list[tuple[tuple[int, ...], str]]:
    return [((), tool)] if isinstance(tool, str) else [((i,), name) for i, name in enumerate(tool)]


def _known_names(registry: Registry, pattern: str) -> str:
    return did_you_mean(pattern, [t.name for t in registry])
