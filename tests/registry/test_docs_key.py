"""``docs:`` in a tool file: a file next to it or a command, checked at load, never sent to the model."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.registry.loader import load_tool_file
from nami_yaml.registry.registry import Registry
from tests.helpers import write


def test_a_docs_file_next_to_the_tool_is_kept_apart_from_the_definition(tmp_path: Path) -> None:
    write(tmp_path / "tools" / "guides" / "deploy.md", "Long deploy guide.\n")
    file = write(tmp_path / "tools" / "deploy.yaml",
                 "name: deploy\ndescription: Deploy a service.\ncommand: [echo]\ndocs: guides/deploy.md\n")
    [tool], problems = load_tool_file(file)
    assert problems == []
    assert tool.docs is not None and tool.docs.file == (tmp_path / "tools" / "guides" / "deploy.md").resolve()
    assert tool.definition()["function"]["description"] == "Deploy a service."
    assert "Long deploy guide" not in str(tool.definition(docs_hint=True))
    assert tool.definition(docs_hint=True)["function"]["description"] == "Deploy a service. Details: tool_docs."


def test_the_hint_appears_only_when_tool_docs_can_read_them(tmp_path: Path) -> None:
    write(tmp_path / "d.md", "docs\n")
    [documented], _ = load_tool_file(write(tmp_path / "a.yaml", "name: a\ndescription: A.\ncommand: [echo]\ndocs: d.md\n"))
    [plain], _ = load_tool_file(write(tmp_path / "b.yaml", "name: b\ndescription: B.\ncommand: [echo]\n"))
    reader_file = write(tmp_path / "tool_docs.yaml", "name: tool_docs\ndescription: R.\ncommand: [echo]\n")
    [reader], _ = load_tool_file(reader_file, builtin=True)
    [impostor], _ = load_tool_file(reader_file)  # someone's own tool of that name reads nothing
    without = Registry([documented, plain]).definitions()
    assert [d["function"]["description"] for d in without] == ["A.", "B."]
    assert [d["function"]["description"] for d in Registry([documented, impostor]).definitions()] == ["A.", "R."]
    with_reader = Registry([documented, plain, reader]).definitions()
    assert [d["function"]["description"] for d in with_reader] == ["A. Details: tool_docs.", "B.", "R."]


def test_a_docs_command_is_an_argv_with_the_tools_process_options(tmp_path: Path) -> None:
    file = write(tmp_path / "k.yaml", "name: pods\ndescription: List pods.\ncommand: [kubectl, get, pods]\n"
                                      "timeout: 30\nenv: {KUBECONFIG: /etc/kube}\ndocs: [kubectl, explain, pods]\n")
    [tool], problems = load_tool_file(file)
    assert problems == [] and tool.docs is not None
    assert tool.docs.command == ("kubectl", "explain", "pods") and tool.docs.file is None
    assert tool.docs.options.timeout == 30 and tool.docs.options.env == {"KUBECONFIG": "/etc/kube"}


def test_bad_docs_are_reported_where_they_are_written(tmp_path: Path) -> None:
    write(tmp_path / "secret.txt", "not yours\n")
    cases = {
        "docs: missing.md": "$.docs: docs file 'missing.md' not found next to the tool file",
        "docs: ../secret.txt": "$.docs: docs '../secret.txt' is outside the tool file's folder",
        "docs: []": "$.docs:",
        "docs: 42": "$.docs:",
    }
    for line, expected in cases.items():
        file = write(tmp_path / "tools" / "t.yaml", f"name: t\ndescription: T.\ncommand: [echo]\n{line}\n")
        tools, problems = load_tool_file(file)
        assert tools == [], line
        assert len(problems) == 1 and f":4:7: {expected}" in str(problems[0]), (line, problems)


def test_a_symlink_out_of_the_folder_is_outside_too(tmp_path: Path) -> None:
    write(tmp_path / "outside.md", "x\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "link.md").symlink_to(tmp_path / "outside.md")
    file = write(tmp_path / "tools" / "t.yaml", "name: t\ndescription: T.\ncommand: [echo]\ndocs: link.md\n")
    _, problems = load_tool_file(file)
    assert "outside the tool file's folder" in str(problems[0])
