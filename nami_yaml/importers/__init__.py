"""Other agents' tool formats -> nami tool files and a review report (``nami import``): HolmesGPT toolsets,
shellmcp and mcp-this YAML, llm-functions bash tools, and a CLI's own help (``nami import cli``, checked
against the installed program by the app layer, which runs it in the sandbox).

Every importer drafts :class:`~nami_yaml.importers.common.Imported` tools; ``common`` loads each with nami's
own loader before anything is written, and writes the files atomically. A source's shell template becomes a
``command:`` argv when it is plainly one command, else a ``script:`` reading every value from its
environment variable (``template``): a value is never spliced into shell text."""
