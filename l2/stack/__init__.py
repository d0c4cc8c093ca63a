"""Isaac Lab's own SO-101 cube stack (``isaaclab_tasks.contrib.stack``), a task this package did not write, run
kit-less on the CPU: its cfg classes derived with only what cannot run offline replaced (the cloud assets, the
PhysX physics) and our cameras added (``config/so101/``)."""

from l2.stack import config  # noqa: F401
