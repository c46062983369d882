"""Sessions: every conversation saved as versioned JSONL as it happens, loaded back (upgraded and repaired)
to continue it, with its token usage and cost; compaction when the context window fills; export.

Never imports the CLI: the CLI and the Python API use it.
"""

from __future__ import annotations

from nami_yaml.session.loader import LoadedSession, load_session
from nami_yaml.session.store import SessionError, SessionRefused, SessionStore
from nami_yaml.session.usage import StepUsage, Totals, UsageMeter
from nami_yaml.session.writer import SessionWriter

__all__ = ["LoadedSession", "SessionError", "SessionRefused", "SessionStore", "SessionWriter", "StepUsage",
           "Totals", "UsageMeter", "load_session"]
