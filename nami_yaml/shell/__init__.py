"""Reading a command line, apart from deciding about it: the bash parser (``bash``), which options of which
programs are inert (``inert_options``, read by ``plain``), which programs run code they are given
(``command_risks``), sed and awk scripts (``scripts``), and whether a line could run a program it does not
name (``hidden``). Heuristics only, and pure: nothing here decides a call (that is ``nami_yaml.policy``),
reads a file or starts a process. It imports nothing of nami_yaml outside this package (as codex keeps
``command_safety`` apart from ``execpolicy``)."""
