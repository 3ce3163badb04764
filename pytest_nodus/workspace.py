"""``python -m pytest_nodus.workspace ENV DEST``: an agent's workspace (``commands/workspace.py``)."""

import sys

from pytest_nodus.commands.workspace import main

if __name__ == "__main__":
    sys.exit(main())
