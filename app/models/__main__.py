"""``python -m app.models`` (``make models``): the command line in :mod:`app.cli.models`."""

from app.cli.models import main

main()
