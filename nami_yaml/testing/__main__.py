"""``python -m nami_yaml.testing``: serve the fake OpenAI-compatible API (see fake_server.main)."""

from nami_yaml.testing.fake_server import main

raise SystemExit(main())
