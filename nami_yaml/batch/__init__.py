"""``nami batch``: many tasks, each in a fresh workspace and a worker process of its own, checked, on this
machine (a process pool) or on a Ray cluster; results as JSONL, compared between runs.

Modules, each one concern: ``tasks`` (the task file), ``workspace`` and ``checks`` (one task's folder and
what must hold afterwards), ``job``, ``task_run`` and ``worker`` (one task in its own process),
``isolate`` and ``proctree`` (that process, its result, its kill), ``pool`` and ``ray_backend`` with
``ship`` (where the processes run), ``runner`` and ``results`` (the batch and its results file), ``compare``.
Nothing is imported here, so reading a task file (``nami check``) loads no agent machinery.
"""
