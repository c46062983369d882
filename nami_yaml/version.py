"""nami's version: a leaf, so the MCP client, session headers and ``--version`` never import the package
root (which would import the Python API)."""

__version__ = "0.1.0"
