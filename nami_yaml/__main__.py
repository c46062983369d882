"""``python -m nami_yaml`` is the ``nami`` command."""

from nami_yaml.cli.main import main

main()
