"""Headless Chromium: a page's screenshot, for the story page's browser test and the docs images.

Debian's `chromium` package (`make browser` installs it); Playwright's browser download does not
reach this project's machines, and one CLI call is all a screenshot needs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find() -> str | None:
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def screenshot(page: Path, png: Path, *, width: int, height: int, timeout: float = 60) -> Path:
    """Render `page` at width x height CSS pixels (device scale 1) into `png`."""
    binary = find()
    if binary is None:
        raise FileNotFoundError("no headless Chromium found (make browser installs Debian's chromium)")
    png.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(  # noqa: S603 - a fixed binary and our own file paths
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=timeout,
    )
    return png
