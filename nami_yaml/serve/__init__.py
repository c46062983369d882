"""``nami mcp serve``: nami's tools handed to other agents over MCP (the optional ``mcp`` extra). Every call
goes through ``serving.ServedTools`` (the loop's executor, policy and audit); ``server`` speaks the protocol
with the official SDK; ``hosts`` and ``stdin`` are its transport's details. A front end over ``app/``, apart
from the MCP client (``nami_yaml.mcp``, a tool source), which it never needs."""
