"""nami: a declarative, YAML-configured LLM agent."""

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _forget_current_folder_under_dash_m() -> None:
    """``python -m nami_yaml…`` puts the current folder first on ``sys.path``, so a ``click.py`` or
    ``yaml.py`` in a cloned repository would be imported in place of the real package. While ``-m`` is
    locating our module, ``sys.argv[0]`` is ``"-m"``: only then is the entry dropped (``python -P`` and
    the ``nami`` command never add it). A library that imports nami keeps its ``sys.path`` as it is."""
    if _sys.argv[:1] != ["-m"] or getattr(_sys.flags, "safe_path", False) or not _sys.path:
        return
    try:
        first = _os.path.realpath(_sys.path[0] or _os.curdir)
        here = _os.path.realpath(_os.getcwd())
    except OSError:
        return
    if first == here:
        del _sys.path[0]


_forget_current_folder_under_dash_m()
