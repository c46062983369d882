"""Parse YAML into plain values while remembering where every value and key came from.

Validation errors are reported as ``file:line:col: $.json.path: message``; this module supplies the
``line:col`` for any JSON path, falling back to the nearest ancestor that exists.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nami_yaml.errors import ERROR, Problem
from nami_yaml.spec.yaml_errors import describe

JsonPath = tuple[str | int, ...]


def format_path(path: JsonPath) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += "[" + repr(part) + "]"
    return out


@dataclass
class Document:
    """A parsed YAML file: its value plus the position of every node (1-based line and column)."""

    file: str
    value: Any
    positions: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    visits: int = 0

    def position(self, path: JsonPath, *, key: bool = False) -> tuple[int, int]:
        if key and path in self.key_positions:
            return self.key_positions[path]
        probe = tuple(path)
        while probe:
            if probe in self.positions:
                return self.positions[probe]
            probe = probe[:-1]
        return self.positions.get((), (1, 1))

    def problem(self, path: JsonPath, message: str, *, key: bool = False, severity: str = ERROR) -> Problem:
        line, col = self.position(path, key=key)
        return Problem(self.file, line, col, format_path(path), message, severity)


# Safe loaders only: no Python object tags, so parsing a YAML file can never run code. The libyaml
# parser, when present, makes loading a thousand tool files several times faster.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


MAX_FILE_BYTES = 1_000_000
# Aliases let a few hundred bytes expand to billions of values ("billion laughs"); a config or tool file
# never needs more than this many.
MAX_NODES = 100_000
MAX_PROBLEMS = 1_000


class _TooLarge(Exception):
    pass


def read_source(path: Path) -> str:
    """The text of a config or tool file: a regular file of at most MAX_FILE_BYTES, UTF-8."""
    return _read_bytes(path).decode("utf-8")


def _read_bytes(path: Path) -> bytes:
    # O_NONBLOCK: a FIFO opens at once (to be refused below) instead of waiting for a writer.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        handle = open(descriptor, "rb", buffering=0, closefd=False)  # noqa: SIM115 (the descriptor is closed below)
        # The size stat gives and a byte more, not MAX_FILE_BYTES at once: a read of n bytes allocates n
        # bytes first, and a megabyte for each of a thousand small tool files was a tenth of a second.
        data = handle.read(min(info.st_size, MAX_FILE_BYTES) + 1)
        while len(data) <= MAX_FILE_BYTES and (more := handle.read(65536)):  # a file that grows meanwhile
            data += more
    finally:
        os.close(descriptor)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES:,} bytes")
    return data


def _walk(loader: yaml.SafeLoader, node: yaml.Node, path: JsonPath, doc: Document, problems: list[Problem]) -> Any:
    doc.positions[path] = _mark(node)
    doc.visits += 1  # counts every visit: duplicate keys re-walk a path without adding a position
    if doc.visits > MAX_NODES or len(problems) > MAX_PROBLEMS:
        raise _TooLarge
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
        # Collections are built here, not by the loader, so a tag would otherwise be silently dropped.
        line, col = _mark(node)
        problems.append(Problem(doc.file, line, col, format_path(path), f"unsupported YAML tag {node.tag}"))
    if isinstance(node, yaml.MappingNode):
        explicit = {id(key_node) for key_node, _ in node.value if key_node.tag != _MERGE_TAG}
        loader.flatten_mapping(node)  # resolves YAML merge keys (<<) the way SafeLoader does
        result: dict[Any, Any] = {}
        from_merge: set[str] = set()
        for key_node, value_node in node.value:
            key = _scalar(loader, key_node)
            if isinstance(key, (list, dict)):
                line, col = _mark(key_node)
                problems.append(Problem(doc.file, line, col, format_path(path), "a mapping key must be a scalar"))
                continue
            key = key if isinstance(key, str) else str(key)
            child = (*path, key)
            if id(key_node) not in explicit:
                from_merge.add(key)
            elif key in from_merge:
                from_merge.discard(key)  # overriding a merged (<<) value is what merge keys are for
            elif key in result:
                line, col = _mark(key_node)
                problems.append(Problem(doc.file, line, col, format_path(child),
                                        f"duplicate key '{key}' (an earlier value would be silently replaced)"))
            doc.key_positions[child] = _mark(key_node)
            result[key] = _walk(loader, value_node, child, doc, problems)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_walk(loader, item, (*path, i), doc, problems) for i, item in enumerate(node.value)]
    return _scalar(loader, node)


def _scalar(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """A scalar's value. Most are strings (resolved so by the parser: quoted, or plain and not a number,
    boolean or null), whose value is the node's text: taken as it is, without the constructor's bookkeeping
    (most of the time of loading a thousand tool files)."""
    if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return node.value
    return loader.construct_object(node, deep=True)


def parse_yaml(text: str, file: str) -> tuple[Document | None, list[Problem]]:
    """Parse one YAML document. Returns (document, problems); the document is None on a syntax error."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(file, None, {(): (1, 1)}), []
        doc = Document(file, None)
        problems: list[Problem] = []
        doc.value = _walk(loader, node, (), doc, problems)
        return doc, problems
    except yaml.MarkedYAMLError as exc:
        line, col, reason = describe(exc, text)  # in nami's words, with where the block or quote began
        return None, [Problem(file, line, col, "$", f"YAML syntax error: {reason}")]
    except yaml.YAMLError as exc:
        return None, [Problem(file, 1, 1, "$", f"YAML error: {exc}")]
    except _TooLarge:
        return None, [Problem(file, 1, 1, "$", f"more than {MAX_NODES:,} values (aliases expand too far) "
                                               f"or {MAX_PROBLEMS:,} problems")]
    except RecursionError:
        return None, [Problem(file, 1, 1, "$", "nested too deeply")]
    finally:
        loader.dispose()


@dataclass
class Source:
    """One file as read once per command: its text, named as messages name it, the SHA-256 of its bytes (what
    the cache of validated tool files is keyed by), and its parse once asked for."""

    file: str
    text: str
    digest: str
    _parsed: tuple[Document | None, list[Problem]] | None = None

    def parsed(self) -> tuple[Document | None, list[Problem]]:
        """``parse_yaml`` of the text, parsed at most once. The document is shared: callers read it and never
        change it; the problems list is each caller's own copy."""
        if self._parsed is None:
            self._parsed = parse_yaml(self.text, self.file)
        doc, problems = self._parsed
        return doc, list(problems)


def read_file(path: Path) -> Source:
    """A file's text (``read_source``: OSError or ValueError when it cannot be read), kept while the file is
    unchanged (its inode, size and times): one command reads a tool file in several places (the code its
    tools run, for trust and for the protected paths, then the loader) and reads and parses it once."""
    info = path.stat()
    key = (str(path), os.getcwd(), info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    found = _PARSED.get(key)
    if found is None:
        data = _read_bytes(path)
        found = Source(_for_messages(path), data.decode("utf-8"), hashlib.sha256(data).hexdigest())
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.clear()
        _PARSED[key] = found
    return found


def parse_file(path: Path) -> tuple[Document | None, list[Problem]]:
    """``parse_yaml`` of a file's text, its problems naming it relative to the current folder; read and parsed
    once while the file is unchanged (``read_file``)."""
    return read_file(path).parsed()


def _for_messages(path: Path) -> str:
    """``path`` relative to the current folder (``os.path.relpath``): below it, the rest of the path, which
    is what relpath gives for a normalised path, without relpath's own work (a thousand tool files)."""
    text, here = os.fspath(path), os.getcwd()
    if text.startswith(here) and text[len(here):len(here) + 1] == os.sep and os.path.normpath(text) == text:
        return text[len(here) + 1:]
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


_PARSED: dict[tuple[Any, ...], Source] = {}
_PARSED_KEPT = 4096  # files kept at most (a project of thousands of tool files reads each once per command)
