"""Headless Chromium for the report tests (Debian's chromium, installed by `make setup` as root), and PNG
decoding for the charts the pages embed."""
from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np


def decode_png(data: bytes) -> np.ndarray:
    import matplotlib.image as mpimg
    return mpimg.imread(io.BytesIO(data), format="png")


def chromium(*args, tmp_path):
    exe = shutil.which("chromium")
    assert exe, "chromium is not installed: `make setup` installs it (scripts/install_chromium.sh)"
    cmd = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'profile'}", "--no-first-run", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def embedded_images(text: str) -> list[tuple[str, str]]:
    """(id, base64 PNG) of every embedded image of a page."""
    return re.findall(r'<img id="([^"]+)" alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', text)
