"""Open an HTML page in headless Chromium: a screenshot, and whether every image on it loaded.

Also a command to make the README's screenshot of a report::

    python tests/browser.py report.html docs/img/inspect_report.png --size 1100,1500
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
"""Debian's package (scripts/setup.sh installs it)."""
# Without the networking flags Chromium waits on the closed network here (component updates, QUIC probes).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=10000",
)
PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.from(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0; });
  document.body.setAttribute('data-images', imgs.length);
  document.body.setAttribute('data-images-loaded', ok.length);
});
</script>"""
"""Appended to a copy of the page: marks the body with the image count and how many decoded."""
WEBGL = ("--use-angle=swiftshader", "--enable-unsafe-swiftshader")
"""WebGL on the CPU (SwiftShader), for live 3D pages such as the viser teleop view."""


def chromium() -> str:
    path = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if path is None:
        raise FileNotFoundError("chromium is not installed (scripts/setup.sh installs Debian's package)")
    return path


def _run(page: Path | str, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Chromium on a file (a Path) or a URL (a str)."""
    uri = page if isinstance(page, str) else page.resolve().as_uri()
    # WebGL runs in the GPU process (SwiftShader there): --disable-gpu would make it crawl.
    flags = [f for f in FLAGS if f != "--disable-gpu"] if WEBGL[0] in extra else FLAGS
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [chromium(), *flags, f"--user-data-dir={profile}", *extra, uri],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def images_loaded(page: str | Path) -> tuple[int, int]:
    """(images on the page, images that decoded with a size > 0), as Chromium's DOM says after load."""
    page = Path(page)
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        probe = Path(tmp) / page.name
        probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
        r = _run(probe, "--dump-dom")
    body = re.search(r"<body[^>]*>", r.stdout)
    if r.returncode != 0 or body is None:
        raise RuntimeError(f"chromium --dump-dom failed ({r.returncode}): {r.stderr[-2000:]}")
    total = re.search(r'data-images="(\d+)"', body.group(0))
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(0))
    if total is None or loaded is None:
        raise RuntimeError(f"the probe script did not run: {body.group(0)}")
    return int(total.group(1)), int(loaded.group(1))


def screenshot(page: str | Path, png: str | Path, size: tuple[int, int] = (1100, 1500)) -> Path:
    """A PNG of the top ``size`` (width, height) pixels of the page (a file)."""
    png = Path(png)
    r = _run(Path(page), f"--screenshot={png.resolve()}", f"--window-size={size[0]},{size[1]}")
    if r.returncode != 0 or not png.is_file():
        raise RuntimeError(f"chromium --screenshot failed ({r.returncode}): {r.stderr[-2000:]}")
    return png


def live_page(url: str, png: str | Path, size: tuple[int, int] = (1280, 800)) -> str:
    """Load a live web app (WebGL on) for Chromium's virtual-time budget: a screenshot to ``png``, and its DOM then.

    Two loads, one for each; the app must show the same thing in both (e.g. a served 3D scene).
    """
    png = Path(png)
    png.unlink(missing_ok=True)
    shot = _run(url, *WEBGL, f"--screenshot={png.resolve()}", f"--window-size={size[0]},{size[1]}")
    if shot.returncode != 0 or not png.is_file():
        raise RuntimeError(f"chromium --screenshot {url} failed ({shot.returncode}): {shot.stderr[-2000:]}")
    dom = _run(url, *WEBGL, "--dump-dom", f"--window-size={size[0]},{size[1]}")
    if dom.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom {url} failed ({dom.returncode}): {dom.stderr[-2000:]}")
    return dom.stdout


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Screenshot an HTML page with headless Chromium.")
    ap.add_argument("page")
    ap.add_argument("png")
    ap.add_argument("--size", default="1100,1500", help="window width,height in pixels (default: %(default)s)")
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split(","))
    print(screenshot(args.page, args.png, (w, h)), images_loaded(args.page), file=sys.stdout)
