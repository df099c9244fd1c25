"""Where the web app's files are: ``app.py``, ``pages/`` and ``.streamlit/config.toml``.

In a checkout (and ``pip install -e .``) they are at the top of the repository, next to ``crowdlab/``, where
``python3 dev.py app`` and ``streamlit run app.py`` use them. A wheel carries copies of them inside the package, as
``crowdlab/_app/`` (``setup.py`` copies them there at build time), so that an installed ``crowdlab app`` serves the
same pages with the same settings. Nothing here imports Streamlit.
"""

from __future__ import annotations

import errno
import re
import tomllib
from pathlib import Path

APP = "app.py"
CONFIG = Path(".streamlit", "config.toml")


def _candidates() -> tuple[Path, Path]:
    here = Path(__file__).resolve().parents[1]  # the crowdlab package folder
    return here / "_app", here.parent  # installed (the wheel's copy), then a checkout's top level


def app_root() -> Path:
    """The folder holding ``app.py`` and ``pages/``: inside the installed package, or at the top of a checkout."""
    for folder in _candidates():
        if (folder / APP).is_file() and (folder / "pages").is_dir():
            return folder
    looked = " and ".join(str(c) for c in _candidates())
    raise FileNotFoundError(errno.ENOENT, f"crowdlab's app files are missing (looked in {looked})", looked)


def config_options(root: Path | None = None) -> dict[str, str]:
    """The app's Streamlit settings (``.streamlit/config.toml``) as command-line options: ``{"server.address":
    "127.0.0.1", "server.headless": "true", ...}`` (booleans in TOML's spelling)."""
    table = tomllib.loads(((root or app_root()) / CONFIG).read_text(encoding="utf-8"))
    out = {}
    for section, values in table.items():
        for key, value in values.items():
            out[f"{section}.{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def env_name(option: str) -> str:
    """The environment variable that sets a Streamlit option: ``server.maxUploadSize`` ->
    ``STREAMLIT_SERVER_MAX_UPLOAD_SIZE`` (Streamlit's own naming)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", option.replace(".", "_"))
    return "STREAMLIT_" + snake.upper()
