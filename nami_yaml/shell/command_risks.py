"""Which commands run other commands or code, and which options make a command run or write something.

Knowledge about programs, separate from the parsing in ``bash.py``. A command with any of these is never
allowed by a prefix rule (``nami check`` refuses an allow rule that names one), and for a deny rule it may
hide the denied program. What is *inert* (the only options an allow rule matches without naming them) is
the other table, ``inert_options.py``: these lists only make the reasons specific and keep allow rules
from naming what always runs code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache

Word = str | None  # a word's value after quote removal, or None when bash computes it (expansion, glob…)

# Commands whose arguments are (or contain) another command: a prefix rule never allows them, since the
# command they run is not the one the rule names.
RUNNERS = frozenset({
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "fish", "csh", "tcsh", "busybox", "eval", "source", ".",
    "exec", "command", "builtin", "env", "xargs", "parallel", "sudo", "doas", "su", "runuser", "pkexec",
    "nohup", "nice", "ionice", "chrt", "taskset", "timeout", "time", "stdbuf", "unbuffer", "watch", "setsid",
    "chroot", "unshare", "nsenter", "flock", "script", "strace", "ltrace", "gdb", "systemd-run", "ssh",
    "trap", "coproc", "fc", "npx", "bunx", "pnpx", "uvx", "fakeroot", "firejail", "bwrap", "proxychains",
    "proxychains4", "torsocks", "chronic", "ifne", "entr", "valgrind", "xvfb-run", "dbus-run-session", "sg",
    "at", "batch",
})
# Sub-commands that run the command in their other words: `git bisect run rm …`, `kubectl exec pod -- rm …`.
RUNNER_COMMANDS = (
    ("git", "bisect", "run"), ("git", "submodule", "foreach"), ("kubectl", "exec"), ("kubectl", "debug"),
    ("docker", "exec"), ("docker", "run"), ("podman", "exec"), ("podman", "run"), ("npm", "exec"),
    ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "exec"), ("yarn", "dlx"), ("uv", "run"), ("uv", "tool", "run"),
    ("poetry", "run"), ("pipenv", "run"), ("pipx", "run"), ("conda", "run"), ("direnv", "exec"),
    ("mise", "exec"), ("asdf", "exec"), ("nix", "shell"), ("nix-shell",),
)
RUNNER_HEADS = frozenset(runner[0] for runner in RUNNER_COMMANDS)
# Runners whose argument is a whole command line: parsed for hidden commands.
SHELL_STRING = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "eval", "su", "runuser", "watch",
                          "script", "flock", "ssh", "parallel", "busybox", "trap"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "fish", "csh", "tcsh", "busybox"})
# Programs that run code in their own language: from an option (below), a file, or their input.
INTERPRETERS = frozenset({"perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "Rscript",
                          "julia", "pwsh", "powershell", "tclsh", "wish", "expect", "osascript", "awk", "gawk",
                          "mawk", "nawk", "sed", "ed", "ex", "dc", "sqlite3", "psql", "mysql", "gnuplot", "jshell",
                          "vim", "vi", "nvim", "view", "gvim", "emacs", "gdb", "lldb", "ftp", "sftp", "irb",
                          "crontab", "at", "batch", "R"})
# A Python interpreter's file name: python, python3, python3.12, pypy3 (match with ``fullmatch``).
PYTHON = re.compile(r"(python|pypy)[0-9.]*")

# Bash builtins that run code hidden in their words or change which program a later name runs: bash
# evaluates an array subscript's `$(…)` even inside quotes (`read 'a[$(rm x)]'`), `let` and `declare -i`
# evaluate arithmetic (a variable's value included), and `hash`, `alias`, `enable` rebind command names.
CODE_BUILTINS: dict[str, str] = {
    **dict.fromkeys(("let", "declare", "typeset", "local", "export", "readonly", "read", "mapfile", "readarray",
                     "unset", "getopts"),
                    "assigns variables (bash runs the `$(…)` in an array subscript, and a variable can rebind a "
                    "command: PATH, BASH_CMDS…)"),
    **dict.fromkeys(("hash", "alias", "unalias", "enable", "shopt"), "changes which program a command name runs"),
    **dict.fromkeys(("compgen", "complete", "compopt", "bind"), "runs commands given in its words"),
}

# Options that make a command run a program or code nami does not see (the value is a program or shell
# code, or tells the program to run one).
_RUNS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir"),
    "git": ("--upload-pack", "--receive-pack", "--exec", "-O", "--open-files-in-pager", "--ext-diff",
            "--config-env", "--exec-path=", "--extcmd"),
    "python": ("-c",),  # python3, python3.12… too
    "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "-p", "--eval", "--print", "-r", "--require", "--import"),
    "nodejs": ("-e", "-p"), "bun": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",),
    "Rscript": ("-e",), "julia": ("-e", "-E"), "pwsh": ("-c", "-Command", "-EncodedCommand"),
    "osascript": ("-e",), "expect": ("-c",),
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--info-script",
            "--new-volume-script", "-F", "--rsh-command", "--rmt-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-TT", "--unzip-command"),
    "sort": ("--compress-program",),
    "rg": ("--pre",),  # rg runs the preprocessor on every file it searches
    "man": ("-P", "--pager", "-H", "--html", "-X", "--gxditview", "-C", "--config-file"),
    "kubectl": ("--kubeconfig",),  # a kubeconfig's user can be an exec credential plugin
    "less": ("-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"),  # lesskey sets LESSOPEN…
    "vim": ("-c", "--cmd", "-S", "-s", "-u", "-U", "+"),  # vim '+!cmd', vim -c '!cmd'
    "emacs": ("--eval", "-l", "--load", "-f", "--funcall", "--script", "-x"),
    "printf": ("-v",),  # printf -v 'BASH_CMDS[ls]' …: a subscript's $(…) runs, a command is rebound
    "test": ("-v", "-R"),  # test -v 'a[$(…)]' runs the substitution
    "wait": ("-p",),
}
for _name in ("vi", "nvim", "view", "vimdiff", "ex", "gvim", "rvim"):
    _RUNS[_name] = _RUNS["vim"]
_RUNS["more"] = ("+",)
# Options that make a command write a file of its choosing (or empty a folder).
_WRITES: dict[str, tuple[str, ...]] = {
    "find": ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "git": ("--output",),
    # pytest empties --basetemp (`--basetemp=$HOME`), writes reports and logs where it is told, moves its
    # cache (-o cache_dir=…, --rootdir) and uploads the session to a pastebin.
    "pytest": ("--basetemp", "--junitxml", "--junit-xml", "--log-file", "--debug", "-o", "--override-ini",
               "--rootdir", "--pastebin"),
    "sort": ("-o", "--output"),
}
_WRITES["py.test"] = _WRITES["pytest"]
# Programs whose options end at their first operand: `printf '%s' -v` prints "-v".
_OPTIONS_END_AT_OPERAND = frozenset({"printf"})
# git options that come before the sub-command and change what git runs or where it reads config from.
_GIT_GLOBAL = ("-c", "--config-env", "--exec-path=", "--git-dir", "--work-tree", "--namespace")
_GIT_GLOBAL_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                    "--super-prefix"})

FIND_RUNS = frozenset(_RUNS["find"])  # -exec, -execdir, -ok, -okdir: the next word is a program


@lru_cache(maxsize=1024)
def program_name(word: str) -> str:
    """The program a command word names, for knowledge about programs: ``/usr/bin/python3.12`` is python."""
    name = os.path.basename(word)
    return "python" if PYTHON.fullmatch(name) else name


def command_problem(words: tuple[Word, ...]) -> str | None:
    """Why a prefix rule never allows this command: it runs another command, runs code hidden in its
    words, or has an option that runs a program or writes a file. None when there is no such reason."""
    found = run_problem(words)
    if found:
        return found
    if not words or words[0] is None:
        return None
    name = program_name(words[0])
    for program, arguments in ((name, words[1:]), *_python_module(name, words)):
        option = _option_in(_WRITES.get(program, ()), program, arguments)
        if option:
            return f"`{program} {option}` writes a file"
    return None


def run_problem(words: tuple[Word, ...]) -> str | None:
    """Why this command may run a command or code other than the one it names, or None."""
    return runner_problem(words) or code_problem(words)


def runner_problem(words: tuple[Word, ...]) -> str | None:
    """The command is a runner (``sudo``, ``xargs``, ``git bisect run``): what it runs is in its words."""
    if not words or words[0] is None:
        return None
    name = program_name(words[0])
    if name in RUNNERS:
        return f"`{name}` runs another command"
    runner = runner_command(words)
    return f"`{' '.join(runner)}` runs another command" if runner is not None else None


def code_problem(words: tuple[Word, ...], *, find_runs: bool = True) -> str | None:
    """The command runs code hidden in its words or a program given in an option (``rg --pre=sh``,
    ``test -v 'a[$(…)]'``). ``find_runs=False`` leaves out find's -exec family, whose command is in sight."""
    if not words or words[0] is None:
        return None
    name = program_name(words[0])
    if name in CODE_BUILTINS:
        return f"`{name}` {CODE_BUILTINS[name]}"
    words = old_style_tar(words)
    for program, arguments in ((name, words[1:]), *_python_module(name, words)):
        options = _RUNS.get(program, ())
        if program == "find" and not find_runs:
            options = ()
        option = _option_in(options, program, arguments)
        if option:
            return f"`{program} {option}` runs a program or code"
    if name == "git":
        for word in _git_global_options(words):
            for option in _GIT_GLOBAL:
                if _is_option(word, option):
                    return f"`git {option}` changes what git runs or which repository it reads"
    return None


def runner_command(words: tuple[Word, ...], start: int = 0) -> tuple[str, ...] | None:
    """The sub-command of RUNNER_COMMANDS the command at ``words[start]`` is (options between its words
    skipped), or None."""
    if start >= len(words) or words[start] is None:
        return None
    name = os.path.basename(words[start])  # type: ignore[arg-type]
    if name not in RUNNER_HEADS:
        return None
    for runner in RUNNER_COMMANDS:
        if runner[0] == name and runner_end(words, runner, start) is not None:
            return runner
    return None


def runner_end(words: tuple[Word, ...], runner: tuple[str, ...], start: int = 0) -> int | None:
    """Where the command run by ``runner`` (at ``words[start]``) may start, or None when it is not it."""
    index = start + 1
    for wanted in runner[1:]:
        while index < len(words) and words[index] != wanted:
            word = words[index]
            if word is None or not word.startswith("-"):
                return None
            index += 1
        if index == len(words):
            return None
        index += 1
    return index


def old_style_tar(words: tuple[Word, ...]) -> tuple[Word, ...]:
    """``tar cIf PROG …`` is ``tar -c -I PROG -f …``: tar's first word is its options without a dash."""
    if len(words) > 1 and words[0] is not None and os.path.basename(words[0]) == "tar":
        first = words[1]
        if first is not None and first and not first.startswith("-"):
            return (words[0], *(f"-{letter}" for letter in first), *words[2:])
    return words


def _option_in(options: tuple[str, ...], program: str, arguments: tuple[Word, ...]) -> str | None:
    if program in _OPTIONS_END_AT_OPERAND:
        arguments = _leading_options(arguments)
    for option in options:
        if any(w is not None and _is_option(w, option) for w in arguments):
            return option
    return None


def _leading_options(arguments: tuple[Word, ...]) -> tuple[Word, ...]:
    for index, word in enumerate(arguments):
        if word is None or not word.startswith("-") or word == "--":
            return arguments[:index + 1]
    return arguments


def _python_module(name: str, words: tuple[Word, ...]) -> list[tuple[str, tuple[Word, ...]]]:
    """``python -m pytest …`` is pytest with the words after the module name."""
    if name != "python":
        return []
    for index, word in enumerate(words[1:-1], 1):
        if word == "-m":
            module = words[index + 1]
            return [(module, words[index + 2:])] if module is not None else []
    return []


def _is_option(word: str, option: str) -> bool:
    if option == "+":
        return word.startswith("+")  # vim +cmd, more +/pattern
    if option.endswith("="):
        return word.startswith(option)
    if option.startswith("--"):
        # git's parse-options and GNU getopt_long take any unambiguous beginning of a long option:
        # `git grep --open-files-in-pag=CMD` and `tar --to-comm=CMD` run CMD.
        name = word.split("=", 1)[0]
        return name == option or (len(name) > 2 and name.startswith("--") and option.startswith(name))
    if len(option) != 2:
        return word == option or word.startswith(option + "=")
    # A short option alone, with its value attached (-Ofoo) or in a cluster (python -Sc, rsync -avze).
    return word.startswith("-") and not word.startswith("--") and option[1] in word[1:]


def _git_global_options(words: tuple[Word, ...]) -> Iterator[str]:
    index = 1
    while index < len(words):
        word = words[index]
        if word is None or not word.startswith("-"):
            return
        yield word
        index += 2 if word in _GIT_GLOBAL_WITH_VALUE else 1
