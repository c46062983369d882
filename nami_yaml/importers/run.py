"""``nami import FORMAT SOURCE…``: each source file read by its format's importer, every tool loaded by nami's
loader, then the files written (all or none when one exists without ``force``), and the review report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nami_yaml.importers.common import Outcome, report_text, verify_loads, write_outcomes

FORMATS = ("holmes", "shellmcp", "mcp-this", "llm-functions")


def import_sources(kind: str, sources: Sequence[Path], out_dir: Path, *, force: bool = False,
                   dry_run: bool = False) -> tuple[list[Outcome], str]:
    """The outcomes (files written unless ``dry_run``) and the report."""
    outcomes: list[Outcome] = []
    for source in sources:
        if kind == "holmes":
            from nami_yaml.importers import holmes

            outcomes.append(holmes.import_file(source, out_dir))
        elif kind == "shellmcp":
            from nami_yaml.importers import shellmcp

            outcomes.append(shellmcp.import_file(source, out_dir))
        elif kind == "mcp-this":
            from nami_yaml.importers import mcp_this

            outcomes.append(mcp_this.import_file(source, out_dir))
        elif kind == "llm-functions":
            from nami_yaml.importers import llm_functions

            outcomes.extend(llm_functions.import_folder(source, out_dir))
        else:
            raise ValueError(f"unknown format {kind!r}")
    _unique_names(outcomes)
    verify_loads(outcomes, kind)
    if not dry_run:
        write_outcomes(outcomes, kind, force=force)
    return outcomes, report_text(outcomes, kind)


# nami's built-in tools (read_file, write_file, grep, ...): an imported tool of the same name would not load
# beside them.
BUILTIN_NAMES = frozenset(path.stem for path in (Path(__file__).resolve().parent.parent / "builtins").glob("*.yaml"))


def _unique_names(outcomes: Sequence[Outcome]) -> None:
    """Two tools with one name would refuse to load together: an imported tool named like a built-in one or
    an earlier imported one gets a suffix, noted."""
    seen: set[str] = set(BUILTIN_NAMES)
    for outcome in outcomes:
        for imported in outcome.tools:
            name, number = imported.name, 2
            while imported.name in seen:
                imported.name = f"{name}_{number}"[-64:]
                number += 1
            if imported.name != name:
                other = "a built-in tool" if name in BUILTIN_NAMES else "another imported tool"
                imported.notes.append(f"renamed from '{name}', a name {other} has")
                if imported.tool:
                    imported.tool["name"] = imported.name
            seen.add(imported.name)
