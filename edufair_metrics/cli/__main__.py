"""``python -m edufair_metrics.cli`` = the ``edufair`` command."""

import sys

from edufair_metrics.cli import main

sys.exit(main())
