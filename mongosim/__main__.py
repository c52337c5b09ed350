"""`python -m mongosim ...`: the same as the `mongosim` command."""

import sys

from mongosim.cli import main

sys.exit(main())
