"""The approvals tests' project and runs (tests/approvals/conftest.py), for the approvals page's tests
(test_approvals_page.py); a test file's own ``project`` fixture still wins in its file."""

from tests.approvals.conftest import project, runs  # noqa: F401 (fixtures)
