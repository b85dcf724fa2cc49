"""`python -m tjq.cli`: the same as `smq`."""

import sys

from tjq.cli import main

sys.exit(main())
