"""Each robot's stack cfgs and gym registrations."""

from l2.stack.config import so101  # noqa: F401
