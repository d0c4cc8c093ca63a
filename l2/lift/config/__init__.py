"""Each robot's lift-cube cfgs and gym registrations, one subpackage per robot (``config/<robot>/``)."""

from . import franka, so101  # noqa: F401
