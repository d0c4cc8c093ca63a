"""``python -m l2.evaluate``."""

import sys

from l2.evaluate.cli import main

sys.exit(main())
