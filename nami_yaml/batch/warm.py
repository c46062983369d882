"""What the warm server of batch workers imports before it forks them (batch/forked.py): the modules every
task uses, the openai SDK first (most of a worker's start). Importing this runs nothing else: no project
is opened, no setting read; each task does that in its own fork.

Also, like each worker, the server keeps its environment (which holds the model's API key) unreadable to
other processes of the user.
"""

from __future__ import annotations

import nami_yaml.app.agent  # noqa: F401
import nami_yaml.app.options  # noqa: F401
import nami_yaml.app.project  # noqa: F401
import nami_yaml.batch.task_run  # noqa: F401
import nami_yaml.batch.worker  # noqa: F401
from nami_yaml.model.client import import_sdk
from nami_yaml.privacy import keep_environment_private

import_sdk()
keep_environment_private()
