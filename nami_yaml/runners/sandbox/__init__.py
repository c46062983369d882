"""The sandbox every process nami starts runs in: bubblewrap, set up per call from what the call declares.

- plan.py: :class:`SandboxPlan` and :func:`plan_for`, the one place a call's sandbox is decided;
- bwrap.py: a plan turned into bwrap's command line (:func:`wrap`);
- probe.py: whether the sandbox works here, and if not why and how to get it;
- failure.py: a failure the sandbox caused, named with the key that would allow it;
- describe.py: a plan for dry runs, approvals and audit records;
- notice.py: what a run, ``nami doctor`` and the trust summary say about it.
"""
