"""The wheel's copy of the web app: ``app.py``, ``pages/*.py`` and ``.streamlit/config.toml`` go into the package
as ``crowdlab/_app/`` when it is built, so ``pip install "crowdlab[app]"`` then ``crowdlab app`` serves the same
pages with the same settings as ``python3 dev.py app`` (crowdlab.io.app_files finds them in either place). The files
stay at the top of the repository, where Streamlit and dev.py use them; everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def app_files() -> list[Path]:
    """The app's files, relative to the repository's top level. A build without them fails rather than ship a wheel
    whose ``crowdlab app`` cannot start (an sdist carries them: MANIFEST.in)."""
    pages = sorted(p.relative_to(HERE) for p in (HERE / "pages").glob("*.py"))
    files = [Path("app.py"), Path(".streamlit", "config.toml"), *pages]
    missing = [p.as_posix() for p in files if not (HERE / p).is_file()]
    if missing or not pages:
        raise SystemExit(f"crowdlab's app files are missing from {HERE}: {', '.join(missing) or 'pages/*.py'}")
    return files


class BuildWithApp(build_py):
    """build_py, then the app's files into ``<build>/crowdlab/_app/`` (not for an editable install, which runs the
    checkout's own files)."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            for rel in app_files():
                dest = Path(self.build_lib, "crowdlab", "_app", rel)
                self.mkpath(str(dest.parent))
                self.copy_file(str(HERE / rel), str(dest))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        out = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return out
        return out + [str(Path(self.build_lib, "crowdlab", "_app", rel)) for rel in app_files()]


setup(cmdclass={"build_py": BuildWithApp})
