"""nami: a declarative, YAML-configured LLM agent."""

__version__ = "0.1.0"
