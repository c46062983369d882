"""The ``fake_openai`` fixture. Enable it with ``pytest_plugins = ["nami_yaml.testing.pytest_plugin"]``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nami_yaml.testing.fake_server import FakeOpenAIServer


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started, empty-scripted server; add responses with ``fake_openai.add(text("hi"), ...)``."""
    with FakeOpenAIServer() as server:
        yield server
