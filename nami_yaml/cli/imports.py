"""``nami import``: other agents' tool files and a CLI's own help -> nami tool files and a review report."""

from __future__ import annotations

import json
from pathlib import Path

import click

from nami_yaml.cli.common import EXIT_ERROR, handle_errors
from nami_yaml.importers.run import FORMATS

OUT_HELP = "Folder for the tool files (default: the first folder agent.yaml's tools.files names, else tools/)."


def _out(out: str | None) -> Path:
    from nami_yaml.app.importing import default_out_dir

    return Path(out) if out else default_out_dir(Path.cwd())


@click.group("import")
def import_group() -> None:
    """Bring tools written for other agents, or a CLI's own help, into nami tool files.

    Each writes one nami tool file per source into --out (never replacing one without --force) and prints a
    review report: what became argv, what needed a script and why, untyped parameters, values inside another
    language's string, the risks and sandbox needs guessed, and what could not be brought.
    """


def _format_command(kind: str, what: str) -> click.Command:
    @click.command(kind, help=f"Import {what}.")
    @click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
    @click.option("--out", "out", help=OUT_HELP)
    @click.option("--force", is_flag=True, help="Replace tool files that exist.")
    @click.option("--dry-run", is_flag=True, help="Write nothing: print the report only.")
    @click.option("--report", "report_file", type=click.Path(path_type=Path), help="Also write the report here.")
    @handle_errors
    def command(sources: tuple[Path, ...], out: str | None, force: bool, dry_run: bool,
                report_file: Path | None) -> None:
        from nami_yaml.importers.common import write_atomically
        from nami_yaml.importers.run import import_sources

        _, report = import_sources(kind, list(sources), _out(out), force=force, dry_run=dry_run)
        click.echo(report)
        if report_file is not None:
            write_atomically(report_file, report)

    return command


WHAT = {"holmes": "HolmesGPT toolset files (toolsets: with Jinja command templates)",
        "shellmcp": "shellmcp server files (tools: with cmd: Jinja templates)",
        "mcp-this": "mcp-this files (tools:/toolsets: with <<param>> commands)",
        "llm-functions": "llm-functions bash tools: a folder (its tools/*.sh) or .sh files"}
for _kind in FORMATS:
    import_group.add_command(_format_command(_kind, WHAT[_kind]))


@import_group.command("cli")
@click.argument("program")
@click.argument("subcommands", nargs=-1)
@click.option("--out", "out", help=OUT_HELP)
@click.option("--option", "chosen", multiple=True, help="An option to include (repeat); default: chosen from the help.")
@click.option("--example", "examples", multiple=True, help="NAME=VALUE for the probe call (JSON for non-strings).")
@click.option("--max-options", default=8, show_default=True, help="At most this many options when choosing.")
@click.option("--force", is_flag=True, help="Replace a tool file that exists.")
@click.option("--dry-run", is_flag=True, help="Write nothing: print the draft and the report.")
@handle_errors
def import_cli(program: str, subcommands: tuple[str, ...], out: str | None, chosen: tuple[str, ...],
               examples: tuple[str, ...], max_options: int, force: bool, dry_run: bool) -> None:
    """Draft a tool from PROGRAM [SUBCOMMAND…]'s own help, then verify it against the installed program.

    The help is read in the sandbox (--help, -h, then `PROGRAM help SUB`); flags become booleans, options
    with values typed parameters, choices enums, the usage line's operands positional parameters. Verified:
    every option is listed by the installed help, the tool loads, and a read tool's probe call succeeds. A
    draft that is not verified is still written, saying so in its first lines and in the report (exit 1).
    """
    from nami_yaml.app.importing import import_cli as run_import
    from nami_yaml.importers.common import file_text, report_text

    values = {}
    for example in examples:
        name, equals, value = example.partition("=")
        if not equals:
            raise click.UsageError(f"--example {example!r}: write NAME=VALUE")
        try:
            values[name] = json.loads(value)
        except json.JSONDecodeError:
            values[name] = value
    done = run_import(Path.cwd(), program, subcommands, _out(out), chosen=chosen, examples=values,
                      max_options=max_options, force=force, dry_run=dry_run)
    if dry_run:
        click.echo(file_text(done.outcome, "cli"))
    click.echo(report_text([done.outcome], "cli"))
    if not done.verified:
        raise SystemExit(EXIT_ERROR)
