"""Positioned YAML: every value and key knows its line and column; problems never raise."""

from __future__ import annotations

import pytest

from nami_yaml.errors import Problem
from nami_yaml.spec.yamlpos import format_path, parse_yaml

TEXT = """\
name: demo
parameters:
  type: object
  properties:
    path: {type: string}
command:
  - cat
  - ["--number", "{path}"]
"""


def test_values_and_keys_have_positions() -> None:
    doc, problems = parse_yaml(TEXT, "t.yaml")
    assert problems == []
    assert doc is not None
    assert doc.value["command"][1] == ["--number", "{path}"]
    assert doc.position(("name",)) == (1, 7)
    assert doc.position(("parameters", "properties", "path"), key=True) == (5, 5)
    assert doc.position(("parameters", "properties", "path")) == (5, 11)
    assert doc.position(("command", 1, 1)) == (8, 18)


def test_missing_path_falls_back_to_nearest_ancestor() -> None:
    doc, _ = parse_yaml(TEXT, "t.yaml")
    assert doc is not None
    assert doc.position(("parameters", "properties", "nope", "type")) == doc.position(("parameters", "properties"))
    problem = doc.problem(("command", 7), "bad")
    assert str(problem) == "t.yaml:7:3: $.command[7]: bad"


def test_format_path_quotes_keys_that_are_not_identifiers() -> None:
    assert format_path(()) == "$"
    assert format_path(("tools", 2, "name")) == "$.tools[2].name"
    assert format_path(("properties", "my-file")) == "$.properties['my-file']"


def test_duplicate_keys_are_problems_at_the_second_key() -> None:
    doc, problems = parse_yaml("a: 1\nb: 2\na: 3\n", "d.yaml")
    assert doc is not None
    assert [str(p) for p in problems] == [
        "d.yaml:3:1: $.a: duplicate key 'a' (an earlier value would be silently replaced)"
    ]


def test_non_scalar_key_is_a_problem_not_a_crash() -> None:
    doc, problems = parse_yaml("? [a, b]\n: 1\nc: 2\n", "k.yaml")
    assert doc is not None and doc.value == {"c": 2}
    assert [p.message for p in problems] == ["a mapping key must be a scalar"]


def test_merge_keys_are_resolved_and_overriding_them_is_not_a_duplicate() -> None:
    doc, problems = parse_yaml("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n", "m.yaml")
    assert problems == []
    assert doc is not None and doc.value["derived"] == {"x": 1, "y": 3}


def test_a_key_repeated_after_a_merge_override_is_still_a_duplicate() -> None:
    _, problems = parse_yaml("base: &b {y: 2}\nderived:\n  <<: *b\n  y: 3\n  y: 4\n", "m.yaml")
    assert [str(p) for p in problems] == [
        "m.yaml:5:3: $.derived.y: duplicate key 'y' (an earlier value would be silently replaced)"
    ]


def test_empty_document_is_none_with_a_position() -> None:
    doc, problems = parse_yaml("# only a comment\n", "e.yaml")
    assert problems == [] and doc is not None
    assert doc.value is None
    assert doc.position(()) == (1, 1)


def test_syntax_error_reports_where_the_unclosed_construct_began() -> None:
    doc, problems = parse_yaml('a: 1\nb: "open\nc: 2\n', "s.yaml")
    assert doc is None
    assert len(problems) == 1
    (problem,) = problems
    assert isinstance(problem, Problem)
    assert (problem.line, problem.col, problem.path) == (4, 1, "$")
    assert problem.message == ("YAML syntax error: the quoted text opened at line 2, column 4 never ends: its "
                               "closing quote is missing")


@pytest.mark.parametrize(("text", "where", "words"), [
    ("name: a\nparameters:\n  type: object\n properties: {}\n", (4, 2),
     "bad indentation: this line lines up with no key of the mapping it is in (which starts at line 1, column 1)"),
    ("tools:\n  - a\n  b: c\n", (3, 3), "the list that starts at line 2, column 3 goes on with a line that is not "
                                        "an item"),
    ("key: value\n- item\n", (2, 1), "a list item inside a mapping (which starts at line 1, column 1)"),
    ("a: [1, 2\nb: 3\n", (2, 2), "the list opened with '[' at line 1, column 4 is not closed"),
    ("a: {x: 1\nb: 3\n", (2, 2), "the mapping opened with '{' at line 1, column 4 is not closed"),
    ("a: b: c\n", (1, 5), "a ': ' here cannot start a key: quote a value that holds ': '"),
    ('a: "\\q"\n', (1, 5), "'\\q' is not an escape YAML knows inside double quotes"),
    ("a: *nope\n", (1, 4), "*nope refers to no anchor &nope defined above it"),
])
def test_syntax_errors_are_said_in_nami_s_words(text: str, where: tuple[int, int], words: str) -> None:
    _, problems = parse_yaml(text, "t.yaml")
    (problem,) = problems
    assert (problem.line, problem.col) == where
    assert problem.message.startswith(f"YAML syntax error: {words}")
    assert "while parsing" not in problem.message and "while scanning" not in problem.message


def test_python_tags_are_refused_so_parsing_runs_no_code(tmp_path) -> None:
    marker = tmp_path / "ran"
    on_collection = f"x: !!python/object/apply:os.system ['touch {marker}']\n"
    doc, problems = parse_yaml(on_collection, "evil.yaml")
    assert [str(p) for p in problems] == [
        "evil.yaml:1:4: $.x: unsupported YAML tag tag:yaml.org,2002:python/object/apply:os.system"
    ]
    on_scalar = f"x: !!python/object/apply:os.system 'touch {marker}'\n"
    doc, problems = parse_yaml(on_scalar, "evil.yaml")
    assert doc is None
    assert len(problems) == 1 and "python/object/apply:os.system" in problems[0].message
    assert not marker.exists()
