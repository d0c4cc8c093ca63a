"""Build a Franka Panda USD offline from the Panda MJCF shipped in ``gymnasium-robotics``.

NVIDIA's Nucleus assets are unreachable on offline/CPU machines. gymnasium-robotics (Apache-2.0)
ships a Panda MJCF with meshes; we rename its joints/bodies to Isaac Lab's names
(``panda_joint1..7``, ``panda_finger_joint1/2``, ``panda_link0..7``, ``panda_leftfinger``...),
drop its actuators (Isaac Lab drives the joints) and its end-effector marker site (it would render as a
grey ball between the fingers) and convert it with ``mujoco-usd-converter``.
The result lives in a cache folder outside git (``$L2L3_CACHE/assets/...``) and is rebuilt when
missing. Needs no simulator: ``python -m l2.assets.franka_build [--force]``.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from l2.assets.build import build_main, build_usd, cached_usd_path, ensure_usd, package_dir, recipe_key, simplify_meshes
from l2.assets.build import cache_root as cache_root  # where l2.recording.warmup and l2.rl.train import it from

BUILD_RECIPE_VERSION = "2"
"""Bump when the recipe below changes so cached USDs are rebuilt."""

MJCF_PACKAGE = "gymnasium_robotics"
GYM_ROBOTICS_PIN = "gymnasium-robotics==1.4.2"
"""The requirement that installs it (``scripts/setup.sh`` pins the same)."""
MJCF_SUBDIR = ("envs", "assets", "kitchen_franka", "franka_assets")
USD_NAME = "panda.usdc"

# The wrapper scene: the MJCF's own asset/default block and kinematic chain, nothing else.
WRAPPER_MJCF = """<mujoco model="panda">
  <include file="franka_assets/assets.xml"/>
  <worldbody>
    <include file="franka_assets/chain.xml"/>
  </worldbody>
</mujoco>
"""
# Longest prefix first: joints are "robot:panda0_jointN", bodies "panda0_linkN".
RENAMES = (("robot:panda0_", "panda_"), ("panda0_", "panda_"))
GUIDE_SITE = re.compile(r"\s*<site name='end_effector'[^>]*/>")
"""The MJCF's end-effector marker: a site (no mass, no collision) that the converter turns into a visible
grey sphere between the fingers, so cameras would see it. Removing it changes nothing in the physics."""


VISUAL_MESHES = ("link0", "link1", "link2", "link3", "link4", "link5", "link6", "link7", "hand")
"""The MJCF's visual meshes (``meshes/visual/<name>.stl``, 7-22 k triangles each): what the cameras' ray tracer
traverses for every pixel that looks at the arm. The fingers' visual mesh is their collision mesh (32 triangles)."""
VISUAL_KEEP = 0.1
"""Fraction of each visual mesh's triangles the build keeps (quadric decimation; docs/cameras.md: the render
time it saves and the images, unchanged to the eye)."""


def _mjcf_dir() -> Path:
    return package_dir(MJCF_PACKAGE, GYM_ROBOTICS_PIN, *MJCF_SUBDIR)


def franka_usd_path() -> Path:
    """Where the built USD lives for the installed package versions (it may not exist yet)."""
    key = recipe_key(BUILD_RECIPE_VERSION, ("gymnasium-robotics", "mujoco-usd-converter"))
    return cached_usd_path("L2L3_FRANKA_USD", f"franka_panda_{key}", USD_NAME)


def write_franka_mjcf(folder: Path, visual_keep: float = VISUAL_KEEP) -> Path:
    """The renamed MJCF, without actuators or marker site, its visual meshes decimated to ``visual_keep`` of
    their triangles, written into ``folder``; returns its main file."""
    shutil.copytree(_mjcf_dir(), folder / "franka_assets", ignore=shutil.ignore_patterns("actuator.xml", "*config.xml"))
    for name in ("assets.xml", "chain.xml"):
        path = folder / "franka_assets" / name
        text = path.read_text()
        for old, new in RENAMES:
            text = text.replace(old, new)
        text, removed = GUIDE_SITE.subn("", text)
        if name == "chain.xml" and removed != 1:
            raise RuntimeError(f"{path}: expected one end_effector site to remove, found {removed}")
        path.write_text(text)
    visual = folder / "franka_assets" / "meshes" / "visual"
    simplify_meshes([visual / f"{name}.stl" for name in VISUAL_MESHES], visual_keep)
    (folder / "panda.xml").write_text(WRAPPER_MJCF)
    return folder / "panda.xml"


def build_franka_usd(out_usd: Path, visual_keep: float = VISUAL_KEEP) -> Path:
    """Convert the renamed MJCF, its visual meshes decimated to ``visual_keep`` of their triangles, to
    ``out_usd`` atomically (build in a temp dir, then rename)."""
    return build_usd(out_usd, lambda folder: write_franka_mjcf(folder, visual_keep))


def ensure_franka_usd(force: bool = False) -> Path:
    """Path of the offline Franka USD, building it first when missing (about 1 s)."""
    return ensure_usd(franka_usd_path(), "L2L3_FRANKA_USD", build_franka_usd, force)


def main(argv: list[str] | None = None) -> int:
    return build_main(argv, "python -m l2.assets.franka_build", __doc__, "franka", franka_usd_path, ensure_franka_usd)


if __name__ == "__main__":
    sys.exit(main())
