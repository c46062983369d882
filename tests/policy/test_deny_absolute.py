"""A deny is absolute (issue 23, item 3): a line that could run a denied program is denied, not asked about.

An "ask" can be approved (--yes, --approve exec, a batch, `mcp serve --approve exec`); a "deny" never is.
So a line whose program name is computed, that runs code nami cannot read, or in which a denied word
appears anywhere while nami cannot read the line as plainly what it says, is denied where a deny rule
could match it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision
from tests.policy.test_plain import harmed, run_in_bash
from tests.programs import needs

Decide = Callable[..., Decision]

DENY_RM = """\
  - tool: bash
    command: rm
    decision: deny
    reason: use the trash tool
  - tool: bash
    command: [git push --force, git push -f]
    decision: deny
  - tool: bash
    command: [ls, echo, git, grep, cat, printf, test]
    decision: allow
"""

# Each of these removes victim/ in a real bash (checked below), without the word rm as a program.
COMPUTED = [
    "$(printf rm) -rf victim",
    "x=rm; $x -rf victim",
    "`printf rm` -rf victim",
    "$'\\x72m' -rf victim",
    "\"$(echo r)m\" -rf victim",
    "r${x}m -rf victim",
    "x=r; ${x}m -rf victim",
    "printf '\\x72m -rf victim' | sh",
    "echo cm0gLXJmIHZpY3RpbQ== | base64 -d | bash",
    "sh <<< \"$(printf '\\x72m -rf victim')\"",
    "bash -c \"$(printf '\\x72m -rf victim')\"",
    "eval \"$(printf '\\x72m') -rf victim\"",
    "x=$'\\x72m'; eval \"$x -rf victim\"",
    "sudo=; $sudo $(printf '\\x72m') -rf victim",
    "env $(printf '\\x72m') -rf victim",
    "printf '%s\\n' victim | xargs $(printf '\\x72m') -rf",
    "printf '%s\\n' victim | xargs -I{} sh -c \"\\$(printf '\\\\162m') -rf {}\"",
    "python3 -c \"import os; os.system(chr(114) + 'm -rf victim')\"",
    "perl -e 'system(chr(114).\"m\", \"-rf\", \"victim\")'",
    "printf -v 'BASH_CMDS[ls]' %s /bin/$'\\x72'm; ls -rf victim",
    "hash -p /bin/$'\\x72'm ls; ls -rf victim",
    "x=\"a[\\$($'\\x72'm -rf victim)]\"; echo $((x))",
    "awk 'BEGIN{system(sprintf(\"%cm -rf victim\", 114))}'",
    "find . -maxdepth 1 -name victim -exec sh -c \"\\$(printf '\\\\162m') -rf {}\" \\;",
    # found by a red-team pass over the first fix
    "x='$(\\162m -rf victim)'; echo ${x@P}",  # a prompt expansion decodes \162 and runs $(…)
    "printf '\\162m\\0-rf\\0victim' | xargs -0 env",  # xargs gives env its command
    "printf '\\162m\\0-rf\\0victim' | xargs -0 nice",
    'GIT_CONFIG_PARAMETERS="\'alias.x=!echo cm0gLXJmIHZpY3RpbQ== | base64 -d | sh\'" git x',
    'printf \'BEGIN{system("\\162m -rf victim")}\' | awk -f /dev/stdin',
    'printf \'BEGIN{system("\\162m -rf victim")}\' | awk -f -',
    "printf '\\162m -rf victim' > x; env BASH_ENV=x bash -c true",
    "printf '\\162m -rf victim' > >(bash); sleep 1",  # >(…) reads what is written to it
]


@pytest.mark.parametrize("command", COMPUTED)
def test_these_lines_run_rm_in_bash(tmp_path: Path, command: str) -> None:
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "x").write_text("precious\n")
    run_in_bash(tmp_path, command)
    assert harmed(tmp_path), command


@pytest.mark.parametrize("command", COMPUTED)
def test_a_line_that_could_run_a_denied_program_is_denied(rules: Callable[[str], Decide], command: str) -> None:
    decision = rules(DENY_RM)("bash", command=command)
    assert (decision.action, decision.source) == ("deny", "rule agent.yaml:3:5"), (command, decision)
    assert "use the trash tool" in (decision.reason or "")


@pytest.mark.parametrize("command", [
    "echo 'rm -rf victim' | sh",
    "printf 'rm -rf victim' > s.sh; bash s.sh",
    "rg --pre=rm . victim",
    "sqlite3 db '.shell rm -rf victim'",
    "git bisect run rm -rf victim",
    "ls; x='rm'",
    "make CLEAN=rm clean",
    "tar -xf a.tar --to-command='rm -rf victim'",
    "python3 -c 'import shutil' -c 'os.system(\"rm x\")'",
    "ls > /tmp/rm",
    "cat <<EOF | sh\nrm -rf victim\nEOF",
    "RM /victim",  # macOS: a case-insensitive file system runs rm
    "kubectl exec web -- rm -rf /data",
    "docker run --rm img rm -rf /x",
])
def test_a_denied_word_in_a_line_nami_cannot_read_is_denied(rules: Callable[[str], Decide], command: str) -> None:
    decision = rules(DENY_RM)("bash", command=command)
    assert (decision.action, decision.source) == ("deny", "rule agent.yaml:3:5"), (command, decision)


DENY_OPTIONS = """\
  - tool: bash
    command: [git commit --amend, git add -f, git log -p]
    decision: deny
  - tool: bash
    command: [git]
    decision: allow
"""
# git (like getopt) reads options after operands: each of these does what the deny names (checked below).
OPTION_AFTER_OPERAND = ["git commit x --amend -q -m amended", "git add ignored -f", "git log HEAD -p"]


def _repo(folder: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "ann@example.com")
    git("config", "user.name", "Ann")
    (folder / "x").write_text("1\n")
    git("add", "x")
    git("commit", "-q", "-m", "first")
    (folder / "x").write_text("2\n")
    (folder / ".gitignore").write_text("ignored\n")
    (folder / "ignored").write_text("i\n")
    return folder


@needs("git")
def test_git_reads_an_option_after_an_operand(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for command in OPTION_AFTER_OPERAND:
        run_in_bash(repo, command)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True).stdout
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True)
    assert log.split() == ["amended"] and "ignored" in staged.stdout


@pytest.mark.parametrize("command", OPTION_AFTER_OPERAND)
def test_a_denied_option_after_an_operand_is_denied(rules: Callable[[str], Decide], command: str) -> None:
    """Fifth review: under `deny: git commit --amend` and `allow: git`, `git commit x --amend` was allowed
    without a question: the deny matched options only between the prefix's words, git reads them anywhere."""
    decision = rules(DENY_OPTIONS)("bash", command=command)
    assert decision.action == "deny", (command, decision)


@pytest.mark.parametrize("command", ["git push $f", "git push \"$(printf -- --force)\"", "git push origin $*",
                                     "git push -uf origin", "git push --forc origin", "git push --force=x"])
def test_a_computed_word_may_be_the_rest_of_a_denied_prefix(rules: Callable[[str], Decide], command: str) -> None:
    decision = rules(DENY_RM)("bash", command=command)
    assert decision.action == "deny", (command, decision)


@pytest.mark.parametrize(("command", "action"), [
    ("echo rm", "allow"),  # echo runs nothing: a word is only a word
    ("grep -rn 'rm -rf' src", "allow"),
    ("git log --grep rm", "allow"),
    ("cat rm.txt", "allow"),
    ("ls $HOME", "ask"),  # computed, but ls runs nothing whatever its words
    ("cat *.py", "ask"),
    ("cat $(git ls-files)", "ask"),
    ("ls > out.txt", "ask"),
    ("echo hi | wc -l", "ask"),  # wc: no rule allows it; the defaults ask
    ("make test", "ask"),
])
def test_lines_that_cannot_run_a_denied_program_are_not_denied(rules: Callable[[str], Decide], command: str,
                                                               action: str) -> None:
    assert rules(DENY_RM)("bash", command=command).action == action, command


def test_a_line_is_only_denied_where_a_deny_rule_exists(rules: Callable[[str], Decide]) -> None:
    decide = rules("  - tool: bash\n    command: [ls]\n    decision: allow\n")
    assert decide("bash", command="$(printf rm) -rf victim").action == "ask"
    assert decide("bash", command="x=rm; $x -rf victim").action == "ask"


def test_the_user_configs_deny_is_absolute_too(rules: Callable[[str], Decide], temp_home: Path) -> None:
    config = temp_home / ".config" / "nami"
    config.mkdir(parents=True)
    (config / "config.yaml").write_text("rules:\n  - tool: bash\n    command: [rm]\n    decision: deny\n")
    decision = rules("  - tool: bash\n    command: [ls]\n    decision: allow\n")("bash", command="x=rm; $x -rf v")
    assert decision.action == "deny", decision


def test_the_programs_denied_by_name_alone_are_the_ones_the_sandbox_masks(workdir: Path, temp_home: Path,
                                                                          write_rules: Callable[..., None]) -> None:
    """Issue 40, item 2: `command: rm` (one word, or a path) masks rm in bash calls; a prefix (`git push
    --force`) stays line reading, since masking git would break all of git; an allow or ask masks nothing.
    The user config's denies count too."""
    from nami_yaml.app import open_project

    write_rules(DENY_RM + "  - {tool: bash, command: [/usr/bin/shred, curl], decision: ask}\n"
                          "  - {tool: bash, command: [/usr/bin/shred], decision: deny}\n")
    (temp_home / ".config" / "nami").mkdir(parents=True)
    (temp_home / ".config" / "nami" / "config.yaml").write_text(
        "rules:\n  - {tool: bash, command: [dd, tar -x], decision: deny}\n")
    project = open_project(cwd=workdir, trust=True, will_run=True)
    assert project.context.denied_programs == ("rm", "/usr/bin/shred", "dd")
