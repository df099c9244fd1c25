"""Every ``CROWDLAB_*`` setting under hostile values: each is refused with a message naming the variable and its
valid range, keeps its default (``nan`` never switches a limit off), never raises at import, stops the command line
with that message (exit 2) and shows as a warning in the app. Generated text (Hypothesis) for every setting either
gives a value inside the range or that message, never another exception.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlab.errors import DataError, SettingError
from crowdlab.io import limits
from crowdlab.io.limits import INT_MAX, RANGES, Limits

ROOT = Path(__file__).resolve().parents[2]
NAMES = [f.name for f in fields(Limits)]
HOSTILE = ["abc", "nan", "NaN", "inf", "-inf", "1e999", "-1e999", "-1", "0", "0.0", "-0", "1e400", "0x10", "1,000"]


def env(name: str) -> str:
    return f"CROWDLAB_{name.upper()}"


def in_range(name: str, v) -> bool:
    if name in RANGES:
        lo, hi, _ = RANGES[name]
        return isinstance(v, float) and math.isfinite(v) and lo < v <= hi
    return isinstance(v, int) and 1 <= v <= INT_MAX


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("raw", HOSTILE)
def test_a_hostile_value_keeps_the_default_and_names_the_variable_and_range(name, raw):
    lim, problems = limits._from_env({env(name): raw})
    assert lim == Limits()  # nothing switched off, nothing changed
    assert len(problems) == 1
    text = problems[0][0]
    assert text.startswith(f"{env(name)}=") and "give " in text and limits.valid_range(name) in text


@pytest.mark.parametrize("name", [n for n in NAMES if n not in RANGES])
def test_a_count_refuses_a_fraction_and_past_2_to_the_53(name):
    for raw in ("2.5", str(INT_MAX + 1), "1e30"):
        lim, problems = limits._from_env({env(name): raw})
        assert lim == Limits() and env(name) in problems[0][0]


def test_good_values_are_read_once_with_their_type():
    lim, problems = limits._from_env(
        {
            "CROWDLAB_MAX_ROWS": " 1e6 ",
            "CROWDLAB_MAX_CLASSES": "7",
            "CROWDLAB_MAX_FILE_MB": "0.5",
            "CROWDLAB_MAX_ABS_VALUE": "1.7e308",
            "CROWDLAB_MAX_WEIGHT": "5",
            "CROWDLAB_KERNELS": "NumPy",
            "CROWDLAB_MAX_ITEMS": "",
        }  # fmt: skip
    )
    assert problems == ()
    assert lim.max_rows == 1_000_000 and type(lim.max_rows) is int and lim.max_classes == 7
    assert lim.max_file_mb == 0.5 and lim.max_abs_value == 1.7e308 and lim.max_weight == 5.0
    assert type(lim.max_weight) is float and lim.max_items == Limits().max_items


def test_the_kernels_switch_refuses_an_unknown_choice():
    lim, problems = limits._from_env({"CROWDLAB_KERNELS": "gpu"})
    assert lim == Limits() and problems[0][0].startswith("CROWDLAB_KERNELS='gpu' is not a choice: give numpy")


def test_several_bad_variables_each_have_their_message():
    _, problems = limits._from_env({"CROWDLAB_MAX_ROWS": "abc", "CROWDLAB_MAX_FILE_MB": "nan", "CROWDLAB_KERNELS": "x"})
    assert [p[0].split("=")[0] for p in problems] == ["CROWDLAB_MAX_FILE_MB", "CROWDLAB_MAX_ROWS", "CROWDLAB_KERNELS"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1, 0, "abc", None, True])
def test_set_limits_and_override_refuse_what_the_environment_refuses(bad):
    before = limits.get_limits()
    for name in ("max_file_mb", "max_rows", "max_abs_value", "max_weight"):
        with pytest.raises(SettingError, match=rf"^{name}=.*give "):
            limits.set_limits(**{name: bad})
        with pytest.raises(SettingError, match=name):
            with limits.override(**{name: bad}):
                pass
    assert limits.get_limits() == before
    with pytest.raises(TypeError, match="unknown limit"):
        limits.set_limits(max_things=3)


def test_nan_never_switches_a_limit_off():
    # before: nan was read as the limit, and "size > nan" is False: a 1e13 score passed the 1e12 limit
    from crowdlab.io.data import read_annotations

    lim, _ = limits._from_env({"CROWDLAB_MAX_ABS_VALUE": "nan"})
    with limits.override(max_abs_value=lim.max_abs_value), pytest.raises(DataError, match="max_abs_value"):
        read_annotations(b"item,worker,score\na,w1,1e13\nb,w2,0.5\na,w2,0.1\n", kind="continuous")


@settings(max_examples=300, deadline=1000, derandomize=True)
@given(
    name=st.sampled_from(NAMES),
    raw=st.one_of(
        st.text(max_size=12),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(min_value=-(10**20), max_value=10**20).map(str),
        st.sampled_from(HOSTILE),
    ),
)
def test_fuzz_every_setting_gives_a_value_in_range_or_the_message(name, raw):
    lim, problems = limits._from_env({env(name): raw})
    if problems:
        assert getattr(lim, name) == getattr(Limits(), name)
        assert problems[0][0].startswith(f"{env(name)}=") and limits.valid_range(name) in problems[0][0]
    else:
        assert in_range(name, getattr(lim, name)) or not raw.strip()


@settings(max_examples=100, deadline=1000, derandomize=True)
@given(raw=st.text(max_size=10))
def test_fuzz_the_kernels_switch(raw):
    _, problems = limits._from_env({"CROWDLAB_KERNELS": raw})
    assert bool(problems) == (raw.strip().lower() not in limits.KERNELS_CHOICES)


def _run(code: list[str], extra: dict[str, str]) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("CROWDLAB_")} | extra
    return subprocess.run(
        [sys.executable, *code], cwd=ROOT, env=e, capture_output=True, text=True, timeout=120, check=False
    )


BAD = {"CROWDLAB_MAX_ROWS": "abc", "CROWDLAB_MAX_FILE_MB": "nan", "CROWDLAB_MAX_CLASSES": "1e999"}


def test_import_never_raises_and_python_warns_on_first_use():
    # before: CROWDLAB_MAX_ROWS=abc raised ValueError while crowdlab was imported
    code = (
        "import warnings, crowdlab\n"
        "from crowdlab.io import limits\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    lim = limits.get_limits()\n"
        "print(lim == limits.Limits(), [str(x.message) for x in w])\n"
    )
    out = _run(["-c", code], BAD)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True ") and "CROWDLAB_MAX_ROWS='abc'" in out.stdout
    assert "CROWDLAB_MAX_FILE_MB='nan'" in out.stdout and "default (400) is used" in out.stdout


def test_the_command_line_stops_with_the_messages():
    out = _run(["-m", "crowdlab", "samples"], BAD)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "error: CROWDLAB_MAX_FILE_MB='nan' is not a finite number: give a number of MB greater than 0 and at "
        "most 1,000,000,000.",
        "error: CROWDLAB_MAX_ROWS='abc' is not a number: give a whole number from 1 to 9,007,199,254,740,992.",
        "error: CROWDLAB_MAX_CLASSES='1e999' is not a finite number: give a whole number from 1 to "
        "9,007,199,254,740,992.",
    ]


def test_the_app_starts_with_the_defaults_and_a_warning():
    # before: the home page showed the ValueError's traceback
    code = (
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=60).run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "print('\\n'.join(w.value.replace('\\\\', '') for w in at.warning))\n"  # unescaped (safe.md)
    )
    out = _run(["-c", code], BAD | {"CROWDLAB_KERNELS": "gpu"})
    assert out.returncode == 0, out.stderr[-2000:]
    for var in ("CROWDLAB_MAX_ROWS", "CROWDLAB_MAX_FILE_MB", "CROWDLAB_MAX_CLASSES", "CROWDLAB_KERNELS"):
        assert var in out.stdout and "the default" in out.stdout


# ------------------------------------------------------------------ the class database's place (issue 31)
SETTINGS_TESTED_HERE = {env(n) for n in NAMES} | {
    "CROWDLAB_KERNELS",
    "CROWDLAB_DATA_DIR",
    "CROWDLAB_CLASS_DB",
    "CROWDLAB_FILES_DIR",
    "CROWDLAB_MOTION_MS",
    "CROWDLAB_CLASS_SECRET",  # tests/app/test_class_pages.py: starting a class on the network needs it
}


@pytest.mark.parametrize(
    ("value", "ms"), [("", 400), ("0", 0), (" 250 ", 250), ("1e9", 2000), ("-5", 0), ("fast", 400), ("nan", 400)]
)
def test_motion_ms_is_a_bounded_length_or_the_default(value, ms, monkeypatch):
    """CROWDLAB_MOTION_MS (how long a live chart animates): clipped to [0, 2000] ms; nonsense gives the default."""
    from crowdlab.ui import live_chart

    monkeypatch.setenv("CROWDLAB_MOTION_MS", value)
    assert live_chart.env_motion_ms() == ms


def test_files_dir_names_what_it_leaves_out(tmp_path, monkeypatch):
    """CROWDLAB_FILES_DIR (the Data page's files on disk): a missing folder or a file is left out, and said; none
    left: the section is off, naming the variable."""
    from crowdlab.ui import large_file

    (tmp_path / "a_file").write_text("x")
    good = tmp_path / "good"
    good.mkdir()
    monkeypatch.setenv("CROWDLAB_FILES_DIR", os.pathsep.join([str(tmp_path / "a_file"), str(tmp_path / "gone")]))
    roots, why = large_file.roots()
    assert roots == [] and why.startswith("Off: CROWDLAB_FILES_DIR") and "gone" in why
    monkeypatch.setenv("CROWDLAB_FILES_DIR", os.pathsep.join([str(good), str(tmp_path / "gone")]))
    roots, why = large_file.roots()
    assert roots == [good.resolve()] and "left out" in why and "gone" in why


def test_every_crowdlab_setting_read_anywhere_is_tested_here():
    """A ``CROWDLAB_*`` variable read by the package, the app or dev.py that this file does not test fails here."""
    import re

    read = set()
    for path in [*ROOT.joinpath("crowdlab").rglob("*.py"), ROOT / "app.py", ROOT / "dev.py", *ROOT.glob("pages/*.py")]:
        if path.is_file():
            read |= set(re.findall(r"CROWDLAB_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    assert read - SETTINGS_TESTED_HERE == set()


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CROWDLAB_DATA_DIR", "a_file", "Set CROWDLAB_DATA_DIR"),
        ("CROWDLAB_DATA_DIR", "/proc/crowdlab-cannot-be-here", "Set CROWDLAB_DATA_DIR"),
        ("CROWDLAB_CLASS_DB", ".", "Set CROWDLAB_CLASS_DB"),
        ("CROWDLAB_CLASS_DB", "a_file/class.db", "Set CROWDLAB_CLASS_DB"),
        ("CROWDLAB_CLASS_DB", "postgresql://someone:secret@127.0.0.1:1/db", "Set CROWDLAB_CLASS_DB"),
    ],
)
def test_a_class_database_that_cannot_be_opened_names_its_setting(variable, value, says, tmp_path, monkeypatch):
    """A file as the data folder, a folder as the database, no server at the URL: a ClassError (a DataError, shown
    as a message) naming the variable and what it must be, the password hidden; it was an OSError or
    sqlite3.OperationalError traceback."""
    from crowdlab.classroom.store import ClassStore

    if value.startswith("postgresql"):
        pytest.importorskip("psycopg")
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CROWDLAB_CLASS_DB", raising=False)
    monkeypatch.delenv("CROWDLAB_DATA_DIR", raising=False)
    monkeypatch.setenv(variable, value)
    with pytest.raises(DataError, match="cannot be opened") as exc:
        ClassStore()
    assert says in str(exc.value) and "secret" not in str(exc.value)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (":memory:", "an in-memory database would be a different empty database for every connection"),
        ("file:class?mode=memory&cache=shared", "in-memory"),
        ("sqlite:///x.db", "neither a file path nor a postgresql:// URL"),
        ("mysql://root:SECRETPW@db.example.org/class", "neither a file path nor a postgresql:// URL"),
    ],
)
def test_a_class_database_the_store_cannot_serve_is_refused(value, says, tmp_path, monkeypatch):
    """:memory: (each pooled connection its own empty database) and other schemes' URLs (they became folders named
    "sqlite:" or "mysql:") are refused with a sentence naming the setting; nothing is created."""
    from crowdlab.classroom.store import ClassStore

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CROWDLAB_CLASS_DB", value)
    with pytest.raises(DataError, match="cannot be used") as exc:
        ClassStore()
    assert says in str(exc.value) and "Set CROWDLAB_CLASS_DB" in str(exc.value)
    assert "SECRETPW" not in str(exc.value) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("postgresql://127.0.0.1:1/db?password=SECRETPW", "PostgreSQL database 'db' on 127.0.0.1"),
        ("postgresql://u:SECRETPW@[bad/db", "its postgresql:// URL cannot be read"),
        ("postgresql://someone:SECRETPW@127.0.0.1:1/classes", "PostgreSQL database 'classes' on 127.0.0.1"),
    ],
)
def test_a_class_database_url_with_a_password_shows_host_and_name_only(value, shown, monkeypatch, caplog):
    """Issue 42: the message every visitor reads names the host and the database, never the password; the full error
    goes to the log."""
    pytest.importorskip("psycopg")
    from crowdlab.classroom import store as cs

    monkeypatch.setattr(cs, "RETRY_WAITS", (0.0,))
    monkeypatch.setenv("CROWDLAB_CLASS_DB", value)
    with pytest.raises(DataError, match="cannot be opened") as exc:
        cs.ClassStore()
    said = str(exc.value)
    assert shown in said and "SECRETPW" not in said and "someone" not in said and "Set CROWDLAB_CLASS_DB" in said
    assert any("cannot be opened" in r.getMessage() for r in caplog.records)


@settings(max_examples=60, deadline=2000, derandomize=True)
@given(raw=st.text(alphabet=st.sampled_from(list("ab/.:~-_ é")), min_size=1, max_size=12))
def test_fuzz_the_data_folder_opens_or_names_its_setting(raw):
    """Any text as CROWDLAB_DATA_DIR (relative to a fresh folder): the store opens there, or a DataError names the
    variable; never another exception."""
    import tempfile

    from crowdlab.classroom.store import ClassStore

    saved = {k: os.environ.pop(k, None) for k in ("CROWDLAB_CLASS_DB", "CROWDLAB_DATA_DIR")}
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        Path("a_file").write_text("x")
        os.environ["CROWDLAB_DATA_DIR"] = raw if raw.startswith(("a_file", "/dev/null")) else f"./{raw}"
        try:
            ClassStore()
        except DataError as exc:
            assert "CROWDLAB_DATA_DIR" in str(exc)
        finally:
            os.chdir(cwd)
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
