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

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from l2.format.cli_args import Parser
from l2.format.l2file import one_line

BUILD_RECIPE_VERSION = "2"
"""Bump when the recipe below changes so cached USDs are rebuilt."""

MJCF_PACKAGE = "gymnasium_robotics"
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


def read_stl(path: Path):
    """A binary STL's ``(vertices (V, 3) float32, faces (F, 3) int64)``, coincident corners merged."""
    import numpy as np

    data = path.read_bytes()
    count = int.from_bytes(data[80:84], "little")
    records = np.frombuffer(
        data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]), count=count, offset=84
    )
    vertices, faces = np.unique(records["v"].reshape(-1, 3), axis=0, return_inverse=True)
    return vertices, faces.reshape(-1, 3)


def write_stl(path: Path, vertices, faces) -> None:
    """A binary STL of the triangles ``faces`` over ``vertices``, with their facet normals."""
    import numpy as np

    corners = vertices[faces].astype(np.float32)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    records = np.zeros(len(faces), dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]))
    records["n"], records["v"] = normals, corners
    path.write_bytes(b"\0" * 80 + len(faces).to_bytes(4, "little") + records.tobytes())


def simplify_visual_meshes(mesh_dir: Path, keep: float) -> None:
    """Decimate the visual meshes in ``mesh_dir`` in place to about ``keep`` of their triangles."""
    import fast_simplification

    if keep >= 1.0:
        return
    for name in VISUAL_MESHES:
        path = mesh_dir / f"{name}.stl"
        vertices, faces = read_stl(path)
        vertices, faces = fast_simplification.simplify(vertices, faces, target_reduction=1.0 - keep)
        write_stl(path, vertices, faces)


def cache_root() -> Path:
    return Path(os.environ.get("L2L3_CACHE", Path.home() / ".cache" / "l2l3"))


def _mjcf_dir() -> Path:
    spec = importlib.util.find_spec(MJCF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"{MJCF_PACKAGE} is not installed; run scripts/setup.sh "
            "(or: pip install --no-deps gymnasium-robotics==1.4.2)"
        )
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*MJCF_SUBDIR)


def _recipe_key() -> str:
    versions = [importlib.metadata.version(p) for p in ("gymnasium-robotics", "mujoco-usd-converter")]
    return hashlib.sha256("|".join([BUILD_RECIPE_VERSION, *versions]).encode()).hexdigest()[:12]


def franka_usd_path() -> Path:
    """Where the built USD lives for the installed package versions (it may not exist yet)."""
    override = os.environ.get("L2L3_FRANKA_USD")
    if override:
        return Path(override)
    return cache_root() / "assets" / f"franka_panda_{_recipe_key()}" / USD_NAME


def build_franka_usd(out_usd: Path, visual_keep: float = VISUAL_KEEP) -> Path:
    """Convert the renamed MJCF, its visual meshes decimated to ``visual_keep`` of their triangles, to
    ``out_usd`` atomically (build in a temp dir, then rename)."""
    src = _mjcf_dir()
    out_dir = out_usd.parent
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=".franka_build_") as tmp:
        tmp = Path(tmp)
        mjcf = tmp / "mjcf"
        shutil.copytree(src, mjcf / "franka_assets", ignore=shutil.ignore_patterns("actuator.xml", "*config.xml"))
        for name in ("assets.xml", "chain.xml"):
            path = mjcf / "franka_assets" / name
            text = path.read_text()
            for old, new in RENAMES:
                text = text.replace(old, new)
            text, removed = GUIDE_SITE.subn("", text)
            if name == "chain.xml" and removed != 1:
                raise RuntimeError(f"{path}: expected one end_effector site to remove, found {removed}")
            path.write_text(text)
        simplify_visual_meshes(mjcf / "franka_assets" / "meshes" / "visual", visual_keep)
        (mjcf / "panda.xml").write_text(WRAPPER_MJCF)
        usd_dir = tmp / "usd"
        cmd = [
            sys.executable,
            "-m",
            "mujoco_usd_converter",
            "--no-layer-structure",
            "--no-physics-scene",
            str(mjcf / "panda.xml"),
            str(usd_dir),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True)
        built = usd_dir / USD_NAME
        if result.returncode != 0 or not built.exists():
            raise RuntimeError(f"mujoco_usd_converter failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        usd_dir.rename(out_dir)
    return out_usd


def ensure_franka_usd(force: bool = False) -> Path:
    """Path of the offline Franka USD, building it first when missing (about 1 s)."""
    path = franka_usd_path()
    if path.is_dir():
        source = "L2L3_FRANKA_USD" if os.environ.get("L2L3_FRANKA_USD") else "the cache"
        raise FileNotFoundError(f"{path}: is a folder, not a USD file (from {source})")
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise FileNotFoundError(f"{path}: cannot be written: {blocker} is a file, not a folder (check $L2L3_CACHE)")
    if force or not path.exists():
        if os.environ.get("L2L3_FRANKA_USD"):
            raise FileNotFoundError(f"L2L3_FRANKA_USD points to a missing file: {path}")
        build_franka_usd(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m l2.assets.franka_build",
        description=__doc__.split("\n\n")[0],
        epilog="Prints the USD path. Exit status: 0 built or cached, 2 the build failed or its place is unusable "
        "(one line, nothing left behind).",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when the cached USD exists")
    parser.add_argument("--quiet", action="store_true", help="print nothing when the USD is already cached")
    args = parser.parse_args(argv)
    existed = franka_usd_path().exists()
    try:
        path = ensure_franka_usd(force=args.force)
    except (RuntimeError, OSError) as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    if not (args.quiet and existed and not args.force):
        print(f"franka USD: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
