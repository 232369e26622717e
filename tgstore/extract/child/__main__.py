"""`python -m child`: extract, then leave at once (see below)."""

import os
import sys

from .main import main

if __name__ == "__main__":
    code = main()
    # The bundle is complete and closed: leave without running tinygrad's atexit hooks or waiting for threads it
    # started (some commits hang there), which would turn a finished extraction into a timeout.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
