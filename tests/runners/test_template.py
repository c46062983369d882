"""Argv and stdin templates, rendered without any process: the exact argv for given arguments."""

from __future__ import annotations

from typing import Any

import pytest

from nami_yaml.display import summarize_arguments
from nami_yaml.runners.template import (
    ArgvRenderer,
    Piece,
    TemplateError,
    group_switches,
    is_off,
    parse,
    refs,
    render_text,
    walk_argv,
    walk_groups,
    whole_element_refs,
)


def test_parse_placeholders_and_literal_braces() -> None:
    assert parse("--max-count={n}") == [Piece("--max-count="), Piece("{n}", "n")]
    assert parse("{{print $1}}") == [Piece("{print $1}")]
    assert parse("{a}{b}") == [Piece("{a}", "a"), Piece("{b}", "b")]
    assert refs("{ref}..{other-ref}") == ["ref", "other-ref"]
    assert parse("") == []


@pytest.mark.parametrize("bad", ["{print $1}", "a}b", "{", "{1abc}", "{ spaced }"])
def test_unmatched_braces_are_refused(bad: str) -> None:
    with pytest.raises(TemplateError, match="unmatched"):
        parse(bad)


def test_walk_argv_reports_index_paths_and_group_depth() -> None:
    assert list(walk_argv(["git", ["-n", "{n}", ["--x"]], 3])) == [
        ((0,), "git", 0), ((1, 0), "-n", 1), ((1, 1), "{n}", 1), ((1, 2, 0), "--x", 2), ((2,), "3", 0)
    ]


def test_walk_groups_and_what_switches_or_repeats_them() -> None:
    template = ["curl", [-1, "-H", "{headers}", ["--x={x}"]], "{url}"]
    assert list(walk_groups(template)) == [((1,), template[1]), ((1, 3), ["--x={x}"])]
    assert group_switches(template[1]) == ["headers"]
    assert whole_element_refs(template[1]) == ["headers"]
    assert whole_element_refs(["--x={x}", "{y}"]) == ["y"]


def render(template: list[Any], args: dict[str, Any], allow_dash: frozenset[str] = frozenset()) -> list[str]:
    return ArgvRenderer(allow_dash).render(template, args)


def test_whole_and_partial_elements() -> None:
    assert render(["git", "log", "--max-count={n}", "{ref}", 7], {"n": 3, "ref": "main"}) == [
        "git", "log", "--max-count=3", "main", "7"
    ]
    assert render(["x", "{a}-{b}"], {"a": 1.5, "b": True}) == ["x", "1.5-true"]


def test_optional_groups_switch_on_every_direct_reference() -> None:
    template = ["ls", ["-l", "{long}"], ["--sort={key}", "--limit={n}"], ["--", "{paths}"]]
    assert render(template, {}) == ["ls"]
    assert render(template, {"long": True, "key": "size"}) == ["ls", "-l"]
    assert render(template, {"long": False, "key": "size", "n": 2}) == ["ls", "--sort=size", "--limit=2"]
    assert render(template, {"paths": []}) == ["ls"]
    assert render(template, {"paths": ["a"], "long": None}) == ["ls", "--", "a"]


def test_zero_and_empty_string_are_present_values() -> None:
    assert render(["x", ["-n", "{n}"], ["-s", "{s}"]], {"n": 0, "s": ""}) == ["x", "-n", "0", "-s", ""]


def test_nested_group_is_switched_by_its_own_references() -> None:
    template = ["x", ["--a={a}", ["--b={b}"]]]
    assert render(template, {"b": 1}) == ["x"]
    assert render(template, {"a": 1}) == ["x", "--a=1"]
    assert render(template, {"a": 1, "b": 2}) == ["x", "--a=1", "--b=2"]


def test_boolean_filling_a_whole_element_renders_nothing() -> None:
    assert render(["git", "branch", ["--all", "{all}"]], {"all": True}) == ["git", "branch", "--all"]


def test_array_filling_a_whole_element_expands_one_per_item() -> None:
    assert render(["rm", "--", "{paths}"], {"paths": ["a b", "c", 3]}) == ["rm", "--", "a b", "c", "3"]


def test_array_in_a_partial_element_is_refused() -> None:
    with pytest.raises(TemplateError, match="parameter 'paths' is an array; it can only fill a whole argv element"):
        render(["x", "--files={paths}"], {"paths": ["a"]})


def test_a_group_with_an_array_filling_a_whole_element_repeats_once_per_item() -> None:
    curl = ["curl", "-s", ["-H", "{headers}"], "{url}"]
    assert render(curl, {"headers": ["Accept: text/plain", "X-Trace: 1"], "url": "http://h/"}) == [
        "curl", "-s", "-H", "Accept: text/plain", "-H", "X-Trace: 1", "http://h/"]
    assert render(curl, {"headers": [], "url": "u"}) == ["curl", "-s", "u"]
    assert render(curl, {"url": "u"}) == ["curl", "-s", "u"]
    # A scalar in the same group is rendered with every item; a nested group inside it too.
    docker = ["docker", "ps", ["--filter", "{filters}", ["--last={n}"]], ["--format", "{format}"]]
    assert render(docker, {"filters": ["status=exited", "label=a"], "n": 2, "format": "{{.ID}}"}) == [
        "docker", "ps", "--filter", "status=exited", "--last=2", "--filter", "label=a", "--last=2",
        "--format", "{{.ID}}"]
    # The item may appear in a partial element of the repeated group as well.
    assert render(["x", ["-e", "{names}", "--note=n-{names}"]], {"names": ["a", "b"]}) == [
        "x", "-e", "a", "--note=n-a", "-e", "b", "--note=n-b"]


def test_a_repeated_group_keeps_every_rule_per_item() -> None:
    with pytest.raises(TemplateError, match="starts with '-'"):
        render(["tar", ["--exclude", "{patterns}"]], {"patterns": ["*.o", "--to-command=sh"]})
    assert render(["tar", ["--exclude", "{patterns}"]], {"patterns": ["-x"]}, frozenset({"patterns"})) == [
        "tar", "--exclude", "-x"]
    with pytest.raises(TemplateError, match="nested array"):
        render(["x", ["-H", "{h}"]], {"h": [["a", "b"]]})
    with pytest.raises(TemplateError, match="one array; 'a' and 'b' are both arrays"):
        render(["x", ["{a}", "{b}"]], {"a": ["1"], "b": ["2"]})


def test_an_array_outside_a_group_still_expands_in_place() -> None:
    assert render(["rm", "--", "{paths}"], {"paths": ["a", "b"]}) == ["rm", "--", "a", "b"]


def test_nested_values_in_an_array_are_refused() -> None:
    with pytest.raises(TemplateError, match="nested object"):
        render(["x", "{items}"], {"items": [{"a": 1}]})


@pytest.mark.parametrize(("template", "args"), [
    (["git", "log", "{ref}"], {"ref": "--output=/tmp/x"}),
    (["git", "log", "{ref}..HEAD"], {"ref": "-p"}),
    (["rm", "{paths}"], {"paths": ["ok", "-rf"]}),
    (["head", "{n}"], {"n": -5}),
])
def test_values_that_would_be_read_as_options_are_refused(template: list[Any], args: dict[str, Any]) -> None:
    with pytest.raises(TemplateError, match="starts with '-' and would be read as an option"):
        render(template, args)


def test_allow_dash_permits_the_named_parameter_only() -> None:
    assert render(["git", "log", "{ref}"], {"ref": "--all"}, frozenset({"ref"})) == ["git", "log", "--all"]
    with pytest.raises(TemplateError, match="parameter 'path'"):
        render(["git", "log", "{ref}", "{path}"], {"ref": "-1", "path": "-x"}, frozenset({"ref"}))


def test_a_dash_after_literal_text_is_not_an_option() -> None:
    assert render(["head", "--lines={n}", "x={v}"], {"n": -5, "v": "-y"}) == ["head", "--lines=-5", "x=-y"]


@pytest.mark.parametrize("args", [{"v": "a\x00b"}, {"v": ["ok", "\x00"]}])
def test_nul_is_refused(args: dict[str, Any]) -> None:
    with pytest.raises(TemplateError, match="NUL"):
        render(["echo", "{v}"], args)
    with pytest.raises(TemplateError, match="NUL"):
        render(["echo", "v={v}"], {"v": "a\x00b"})


def test_is_off() -> None:
    assert [is_off(v) for v in (None, False, [], 0, "", {}, True)] == [True, True, True, False, False, False, False]


def test_render_text_for_stdin() -> None:
    args = {"name": "nami", "items": [1, "two"], "meta": {"b": 1, "a": 2}, "missing": None, "ok": False}
    assert render_text('{{"n": "{name}"}} {items} {meta} [{missing}] {ok}', args) == (
        '{"n": "nami"} [1, "two"] {"a": 2, "b": 1} [] false'
    )


def test_summarize_arguments_hides_long_values() -> None:
    assert summarize_arguments({"path": "a.txt", "n": 3}) == 'path="a.txt" n=3'
    assert summarize_arguments({"content": "x" * 500}) == "content=<500 chars>"


def test_the_value_that_starts_an_element_is_checked_even_after_an_empty_one() -> None:
    renderer = ArgvRenderer()
    with pytest.raises(TemplateError, match="'ref' starts with '-'"):
        renderer.render(["git", "show", "{remote}{ref}"], {"remote": "", "ref": "--output=/tmp/x"})
    assert renderer.render(["git", "show", "{remote}{ref}"], {"remote": "origin/", "ref": "-x"}) == [
        "git", "show", "origin/-x"]
