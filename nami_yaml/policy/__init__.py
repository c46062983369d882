"""Decisions for every call: what a call may do, and what needs which approval. Pure: it decides, the CLI asks."""
