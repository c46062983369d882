"""Asking a person, wherever they are: the terminal (cli/approve.py) or the durable queue (a pending
approval kept in a folder, answered with ``nami approvals approve|deny ID`` from any shell); who answered,
authenticated (the OS user who owns the answer file, or a named approver's token); and the digest that
binds an approval to exactly what runs (binding.py), decided again when the answer comes.

Never imports cli/: nothing here prints for humans except the one line a waiting run writes on stderr
(the id and how to answer), handed to it as a callable.
"""
