"""``python -m l2.mimic``: see :mod:`l2.mimic.run`."""

import sys

from l2.mimic.run import main

sys.exit(main())
