"""The class store while its PostgreSQL server stops and starts again mid-class: a vote while it is down is refused
with a sentence (no exception of the driver), every acknowledged vote is there afterwards, and votes are accepted
again once the server is back (the store reconnects by itself).

The test stops and starts the throwaway cluster that .ci/postgres created: CI exports its URL
(``CROWDLAB_TEST_POSTGRES_URL``) and data folder (``CROWDLAB_TEST_POSTGRES_DIR``). Skipped without them, except in CI.
"""

from __future__ import annotations

import glob
import os
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crowdlab.classroom.store import ClassStore, ClassUnavailable, Item, Limits

ROOT = Path(__file__).resolve().parents[2]
URL = os.environ.get("CROWDLAB_TEST_POSTGRES_URL")
DIR = os.environ.get("CROWDLAB_TEST_POSTGRES_DIR")

pytestmark = pytest.mark.skipif(
    not (URL and DIR) and not os.environ.get("CI"),
    reason="needs CROWDLAB_TEST_POSTGRES_URL and CROWDLAB_TEST_POSTGRES_DIR (.ci/run exports both)",
)


def _pg_ctl(*args: str) -> None:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda b: int(b.split("/")[-2]))
    cmd = [f"{bins[-1]}/pg_ctl", "-D", str(DIR), *args]
    if os.getuid() == 0:  # PostgreSQL refuses to run as root: .ci/postgres runs it as postgres
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def _stop() -> None:
    _pg_ctl("stop", "-m", "immediate", "-w")  # as a crash: no clean shutdown, recovery from the WAL at start


def _start() -> None:
    port = str(urlsplit(URL).port or 5432)
    env = {**os.environ, "CROWDLAB_PG_DIR": str(DIR), "CROWDLAB_PG_PORT": port}
    subprocess.run([str(ROOT / ".ci" / "postgres")], check=True, capture_output=True, timeout=120, env=env)


def test_a_class_survives_its_postgresql_server_stopping_and_starting():
    assert URL and DIR, "CI must export CROWDLAB_TEST_POSTGRES_URL and CROWDLAB_TEST_POSTGRES_DIR"
    import psycopg

    with psycopg.connect(URL, autocommit=True) as conn:
        tables = ("predictions", "questions", "votes", "students", "items", "sessions", "rate_limits", "schema_version")
        for t in tables:
            conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
    store = ClassStore(URL, limits=Limits(votes_per_window=100_000))
    items = [Item(f"i{k}", f"Item {k}", truth="yes") for k in range(8)]
    session, key = store.create_session(items, ("yes", "no"), per_student=8)
    students = [store.join(session.join_code, f"Student {k}") for k in range(4)]
    acked: set[tuple[str, str]] = set()
    refused: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def phone(student, token):  # votes over and over while the server goes down and comes back
        n = 0
        while not stop.is_set():
            item = student.assigned[n % len(student.assigned)]
            try:
                store.vote(token, item, "yes" if n % 2 else "no")
            except ClassUnavailable as exc:
                with lock:
                    refused.append(str(exc))
            except BaseException as exc:  # anything else fails the test
                errors.append(exc)
                return
            else:
                with lock:
                    acked.add((student.id, item))
            n += 1
            time.sleep(0.01)

    threads = [threading.Thread(target=phone, args=s) for s in students]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        before = len(acked)
        _stop()
        try:
            st, token = students[0]
            with pytest.raises(ClassUnavailable) as exc:  # a vote while the server is down: a sentence
                store.vote(token, st.assigned[0], "yes")
            assert "The class server is not answering: your answer was not counted." in str(exc.value)
            assert "Try again in a moment" in str(exc.value)
            time.sleep(1.0)
        finally:
            _start()
        time.sleep(1.5)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    assert before > 0 and refused, (before, len(refused))
    assert all("your answer was not counted" in m for m in refused)
    got = {(v["student_id"], v["item_id"]) for v in store.votes(session.id, key)}
    assert acked <= got, f"acknowledged votes lost: {sorted(acked - got)[:5]}"
    # after the restart the same store accepts votes again
    st, token = students[1]
    store.vote(token, st.assigned[0], "no")
    assert store.student(token).voted[st.assigned[0]] == "no"
    st2, token2 = store.join(session.join_code, "Late Lark")
    store.vote(token2, st2.assigned[0], "yes")
    assert store.counts(session.id, key)["students"] == 5
    store.close()
