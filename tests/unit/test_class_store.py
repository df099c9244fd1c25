"""The class-session store (crowdlab.classroom.store) on SQLite files in tmp_path, and on PostgreSQL when a server
is reachable (``CROWDLAB_TEST_POSTGRES_URL``; .ci/run starts one): every refusal of the security list, idempotent
votes, resuming by token, two sessions side by side, expiry, migration, and 200 concurrent students x 20 votes."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time

import pytest

from crowdlab.classroom import store as cs
from crowdlab.classroom.store import ClassError, ClassStore, Item, Limits

CHOICES = ("yes", "no")


def _items(n=6, prefix="i"):
    return [Item(f"{prefix}{k}", f"Is {k} prime?", truth="yes" if k in (2, 3, 5) else "no") for k in range(n)]


def _pg_url() -> str | None:
    url = os.environ.get("CROWDLAB_TEST_POSTGRES_URL")
    if not url:
        return None
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3):
            pass
    except Exception:
        return None
    return url


def _drop_all(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for t in (
            "predictions",
            "questions",
            "votes",
            "students",
            "items",
            "sessions",
            "rate_limits",
            "schema_version",
        ):
            conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "class.db")
    pg = _pg_url()
    if pg is None:
        if os.environ.get("CI") and os.environ.get("CROWDLAB_TEST_POSTGRES_URL"):
            pytest.fail("CROWDLAB_TEST_POSTGRES_URL is set but no PostgreSQL server answers there")
        pytest.skip("no PostgreSQL server (set CROWDLAB_TEST_POSTGRES_URL; .ci/run starts one)")
    _drop_all(pg)
    return pg


@pytest.fixture
def store(url):
    s = ClassStore(url)
    yield s
    s.close()


def _session(store, **kw):
    return store.create_session(_items(), CHOICES, per_student=kw.pop("per_student", 4), **kw)


def _n_votes(store, sid, key):
    return len(store.votes(sid, key))


def test_session_join_vote_and_counts(store):
    session, key = _session(store, title="Monday")
    assert len(session.join_code) == cs.CODE_LENGTH and set(session.join_code) <= set(cs.CODE_ALPHABET)
    assert len(set(cs.CODE_ALPHABET)) >= 30
    student, token = store.join(session.join_code.lower(), "Quiet Otter")
    assert student.session_id == session.id and len(student.assigned) == 4
    first = student.assigned[0]
    store.vote(token, first, "yes")
    store.vote(token, first, "no")  # a repeat replaces
    votes = store.votes(session.id, key)
    assert [(v["item_id"], v["label"], v["pseudonym"]) for v in votes] == [(first, "no", "Quiet Otter")]
    counts = store.counts(session.id, key)
    assert counts["students"] == 1 and counts["votes"] == 1 and counts["by_item"] == {first: {"no": 1}}
    # resuming by token: the student and their answers come back
    again = store.student(token)
    assert again.id == student.id and again.voted == {first: "no"} and again.assigned == student.assigned


def test_secrets_are_stored_only_hashed(tmp_path):
    path = tmp_path / "class.db"
    store = ClassStore(str(path))
    session, key = _session(store)
    _, token = store.join(session.join_code, "Quiet Otter")
    store.close()
    dump = "\n".join(sqlite3.connect(path).iterdump())
    assert key not in dump and token not in dump
    assert cs._hash(key) in dump and cs._hash(token) in dump


def test_wrong_and_expired_code(store):
    session, key = _session(store, code_ttl=60)
    with pytest.raises(ClassError, match="No class session has this code"):
        store.join("ZZZZZZ" if session.join_code != "ZZZZZZ" else "YYYYYY", "A")
    with pytest.raises(ClassError, match="expired"):
        store.join(session.join_code, "Late Lark", now=time.time() + 120)
    assert store.counts(session.id, key)["students"] == 0


def test_join_attempts_are_rate_limited_by_address(url):
    store = ClassStore(url, limits=Limits(join_failures_per_client=3))
    session, _ = _session(store)
    for _ in range(3):
        with pytest.raises(ClassError, match="No class session"):
            store.join("AAAAAA", "A", client="10.0.0.1")
    # the right code is refused too for this address now: its guessing cannot go on
    with pytest.raises(ClassError, match="Too many wrong codes"):
        store.join(session.join_code, "A", client="10.0.0.1")
    with pytest.raises(ClassError, match="Too many wrong codes"):
        store.join("BBBBBB", "A", client="10.0.0.1")
    store.join(session.join_code, "B", client="10.0.0.2")  # another address still joins
    store.close()


def test_sixty_guesses_from_one_address_are_not_all_evaluated(url):
    """The limit keys on the address (a reload or a new browser session gets no fresh allowance): of 60 guesses from
    one address, 20 (the default limit) are looked up."""
    store = ClassStore(url)
    said = []
    for k in range(60):
        with pytest.raises(ClassError) as exc:
            store.join("AAAAA" + cs.CODE_ALPHABET[k % 31], "A", client="203.0.113.9")
        said.append(str(exc.value))
    looked = sum("No class session" in m for m in said)
    assert looked == store.limits.join_failures_per_client == 20
    assert all("Too many wrong codes" in m for m in said[20:])
    store.close()


def test_wrong_codes_from_many_addresses_never_block_a_right_code(url):
    """300 wrong codes (from 300 addresses, or 300 from one) do not lock anyone else out, the right code included."""
    store = ClassStore(url)
    session, key = _session(store)
    for k in range(300):
        with pytest.raises(ClassError):
            store.join("AAAAAA", "A", client=f"attacker-{k % 30}")
    for k in range(5):
        store.join(session.join_code, f"Student {k}", client=f"192.168.1.{k}")
    store.join(session.join_code, "Student Local", client="local")
    assert store.counts(session.id, key)["students"] == 6
    store.close()


def test_a_code_of_other_symbols_is_wrong_without_a_query(store):
    session, _ = _session(store)
    for bad in ("AB\x00CDE", "A" * 5000, "ÄÖÜÄÖÜ", session.join_code + "\x00"):
        with pytest.raises(ClassError, match="No class session"):
            store.join(bad, "A", client="x")


@pytest.mark.parametrize("token", [None, "", "forged-token", "x" * 200])
def test_forged_token_is_refused(store, token):
    session, key = _session(store)
    student, _ = store.join(session.join_code, "Quiet Otter")
    with pytest.raises(ClassError, match="not valid|not joined"):
        store.vote(token, student.assigned[0], "yes")
    assert _n_votes(store, session.id, key) == 0


def test_token_of_a_deleted_session_is_refused(store):
    session, key = _session(store)
    student, token = store.join(session.join_code, "Quiet Otter")
    store.delete_session(session.id, key)
    with pytest.raises(ClassError, match="not valid"):  # a replayed token of a deleted session
        store.vote(token, student.assigned[0], "yes")


def test_unknown_item_and_label_are_refused(store):
    session, key = _session(store)
    student, token = store.join(session.join_code, "Quiet Otter")
    other = next(i.item_id for i in store.items(session.id) if i.item_id not in student.assigned)
    for item, label, msg in [
        ("no-such-item", "yes", "not one of yours"),
        (other, "yes", "not one of yours"),
        (student.assigned[0], "maybe", "not one of the session's choices"),
        (student.assigned[0], "<script>", "not one of the session's choices"),
    ]:
        with pytest.raises(ClassError, match=msg):
            store.vote(token, item, label)
    assert _n_votes(store, session.id, key) == 0


def test_vote_after_close_is_refused(store):
    session, key = _session(store)
    student, token = store.join(session.join_code, "Quiet Otter")
    store.vote(token, student.assigned[0], "yes")
    store.set_status(session.id, key, "closed")
    with pytest.raises(ClassError, match="Voting is closed"):
        store.vote(token, student.assigned[1], "yes")
    with pytest.raises(ClassError, match="Voting is closed"):  # not even a change of an earlier answer
        store.vote(token, student.assigned[0], "no")
    with pytest.raises(ClassError, match="closed"):
        store.join(session.join_code, "Late Lark")
    assert [v["label"] for v in store.votes(session.id, key)] == ["yes"]


def test_lecturer_actions_need_the_key(store):
    session, key = _session(store)
    store.join(session.join_code, "Quiet Otter")
    for wrong in (None, "", "x", key[:-1], session.join_code):
        for action in (
            lambda k: store.counts(session.id, k),
            lambda k: store.votes(session.id, k),
            lambda k: store.students(session.id, k),
            lambda k: store.set_status(session.id, k, "closed"),
            lambda k: store.set_reveal(session.id, k, {"class": {}}),
            lambda k: store.delete_session(session.id, k),
            lambda k: store.lecturer_session(session.join_code, k),
        ):
            with pytest.raises(ClassError, match="lecturer key is wrong"):
                action(wrong)
    s = store.session(session.id)
    assert s.status == "open" and s.reveal is None
    assert store.lecturer_session(session.join_code, key).id == session.id


@pytest.mark.parametrize(
    "name",
    ["<script>alert(1)</script>", "**bold**", "$x^2$", "a\nb\x1b[31m", "[x](https://evil.org)", "=HYPERLINK(1)", ""],
)
def test_hostile_pseudonym_is_refused(store, name):
    session, key = _session(store)
    with pytest.raises(ClassError, match="name"):
        store.join(session.join_code, name)
    _, token = store.join(session.join_code, "Quiet Otter")
    with pytest.raises(ClassError, match="name"):
        store.rename(token, name)
    assert [s.pseudonym for s in store.students(session.id, key)] == ["Quiet Otter"]
    assert store.join(session.join_code, "  Zoë   O'Neil ")[0].pseudonym == "Zoë O'Neil"
    with pytest.raises(ClassError, match="longer than"):
        store.join(session.join_code, "x" * 33)


def test_vote_rate_limit(url):
    store = ClassStore(url, limits=Limits(votes_per_window=3, vote_window=10))
    session, key = _session(store)
    student, token = store.join(session.join_code, "Quiet Otter")
    t = time.time()
    for k in range(3):
        store.vote(token, student.assigned[k], "yes", now=t)
    with pytest.raises(ClassError, match="Too many answers"):
        store.vote(token, student.assigned[3], "yes", now=t + 1)
    assert _n_votes(store, session.id, key) == 3
    store.vote(token, student.assigned[3], "yes", now=t + 11)  # the next window
    assert _n_votes(store, session.id, key) == 4
    store.close()


def test_two_sessions_do_not_mix(store):
    a, key_a = store.create_session(_items(prefix="a"), CHOICES, per_student=3)
    b, key_b = store.create_session([Item(f"b{k}", "Which colour?") for k in range(6)], ("red", "blue"), per_student=3)
    assert a.join_code != b.join_code
    sa, ta = store.join(a.join_code, "Ann")
    sb, tb = store.join(b.join_code, "Bob")
    store.vote(ta, sa.assigned[0], "yes")
    store.vote(tb, sb.assigned[0], "red")
    with pytest.raises(ClassError, match="not one of yours"):
        store.vote(ta, sb.assigned[0], "yes")  # Ann's token cannot vote in Bob's session
    with pytest.raises(ClassError, match="lecturer key is wrong"):
        store.votes(a.id, key_b)  # one lecturer's key does not open the other's session
    assert {v["pseudonym"] for v in store.votes(a.id, key_a)} == {"Ann"}
    assert {v["label"] for v in store.votes(b.id, key_b)} == {"red"}
    assert store.counts(a.id, key_a)["students"] == 1 == store.counts(b.id, key_b)["students"]


def test_items_are_dealt_evenly(store):
    session, key = store.create_session(_items(10), CHOICES, per_student=3)
    for k in range(10):
        store.join(session.join_code, f"Student {k}")
    dealt = [i for s in store.students(session.id, key) for i in s.assigned]
    per_item = {i: dealt.count(i) for i in {it.item_id for it in store.items(session.id)}}
    assert set(per_item.values()) == {3}  # 10 students x 3 items over 10 items


def test_roles_dealt_by_the_given_function(store):
    session, key = _session(store, shares={"honest": 0.5, "spammer": 0.5, "bogus": 1.0})
    assert store.session(session.id).shares == {"honest": 0.5, "spammer": 0.5}
    seen = []

    def deal(counts, shares):
        seen.append(dict(counts))
        return "spammer" if counts["spammer"] < counts["honest"] else "honest"

    for k in range(4):
        store.join(session.join_code, f"S{k}", deal=deal)
    assert [s.role for s in store.students(session.id, key)] == ["honest", "spammer", "honest", "spammer"]
    assert seen[0] == {"honest": 0, "spammer": 0} and seen[3] == {"honest": 2, "spammer": 1}


def test_reveal_reaches_only_the_student(store):
    session, key = _session(store)
    s1, t1 = store.join(session.join_code, "Ann")
    s2, t2 = store.join(session.join_code, "Bob")
    assert store.reveal_for(t1) is None
    store.set_reveal(
        session.id, key, {"students": {s1.id: {"accuracy": 0.9}, s2.id: {"accuracy": 0.4}}, "class": {"mv": 0.8}}
    )
    assert store.reveal_for(t1) == {
        "role": "honest",
        "me": {"accuracy": 0.9},
        "class": {"mv": 0.8},
        "choices": list(CHOICES),
    }
    assert store.reveal_for(t2)["me"] == {"accuracy": 0.4}
    assert store.session(session.id).status == "closed"


def test_expired_sessions_are_deleted(store):
    session, key = _session(store, session_ttl=60)
    keep, key2 = _session(store)
    student, token = store.join(session.join_code, "Ann")
    store.vote(token, student.assigned[0], "yes")
    assert store.purge_expired(now=time.time() + 120) == 1
    with pytest.raises(ClassError, match="no longer exists"):
        store.session(session.id)
    with pytest.raises(ClassError, match="not valid"):
        store.student(token)
    assert store.session(keep.id).id == keep.id
    assert store._read("SELECT COUNT(*) FROM votes")[0][0] == 0
    assert store._read("SELECT COUNT(*) FROM items WHERE session_id = ?", (session.id,))[0][0] == 0


def test_restart_keeps_everything_and_migration_runs_once(url):
    s1 = ClassStore(url)
    session, key = _session(s1)
    student, token = s1.join(session.join_code, "Ann")
    s1.vote(token, student.assigned[0], "yes")
    s1.close()
    s2 = ClassStore(url)  # a new process: the same file or server
    assert s2.schema_version() == cs.SCHEMA_VERSION
    assert s2._read("SELECT COUNT(*) FROM schema_version")[0][0] == len(cs.MIGRATIONS)
    assert s2.student(token).voted == {student.assigned[0]: "yes"}
    assert s2.lecturer_session(session.join_code, key).id == session.id
    s2.close()


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.delenv("CROWDLAB_CLASS_DB", raising=False)
    monkeypatch.setenv("CROWDLAB_DATA_DIR", str(tmp_path / "data"))
    assert cs.default_url() == str(tmp_path / "data" / "class.db")
    store = ClassStore()
    assert (tmp_path / "data" / "class.db").exists()
    assert store._read("PRAGMA journal_mode")[0][0] == "wal"
    store.close()
    monkeypatch.setenv("CROWDLAB_CLASS_DB", "postgresql://u@h/db")
    assert cs.default_url() == "postgresql://u@h/db"


def test_empty_or_bad_item_sets_are_refused(store):
    with pytest.raises(ClassError, match="empty"):
        store.create_session([], CHOICES)
    with pytest.raises(ClassError, match="two distinct answers"):
        store.create_session(_items(), ("yes",))
    with pytest.raises(ClassError, match="share an id"):
        store.create_session([Item("a", "p"), Item("a", "q")], CHOICES)
    with pytest.raises(ClassError, match="truth"):
        store.create_session([Item("a", "p", truth="maybe")], CHOICES)


def test_stress_200_students_20_votes_each_lose_nothing(url):
    """200 students on 200 threads, each joining and answering 20 items (one changed answer each): every vote is
    stored once, none lost, none duplicated."""
    store = ClassStore(url, limits=Limits(votes_per_window=100), pool_size=8)
    items = [Item(f"i{k}", f"item {k}", truth="yes") for k in range(40)]
    session, key = store.create_session(items, CHOICES, per_student=20)
    errors: list[BaseException] = []
    expected: dict[tuple[str, str], str] = {}
    lock = threading.Lock()
    start = threading.Barrier(200)

    def student(k: int) -> None:
        try:
            start.wait()
            me, token = store.join(session.join_code, f"Student {k}", client=f"c{k}")
            for j, item in enumerate(me.assigned):
                store.vote(token, item, "yes" if (j + k) % 2 else "no")
            store.vote(token, me.assigned[0], "yes")  # a change of mind replaces
            with lock:
                for j, item in enumerate(me.assigned):
                    expected[(me.id, item)] = "yes" if (j + k) % 2 or j == 0 else "no"
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=student, args=(k,)) for k in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    votes = store.votes(session.id, key)
    got = {(v["student_id"], v["item_id"]): v["label"] for v in votes}
    assert len(votes) == 200 * 20 == len(got)  # no duplicates
    assert got == expected  # nothing lost, the last answer kept
    counts = store.counts(session.id, key)
    assert counts["students"] == 200 and counts["done"] == 200 and counts["votes"] == 4000
    store.close()


def test_get_store_deletes_expired_sessions_while_the_app_runs(tmp_path, monkeypatch):
    store = cs.get_store(str(tmp_path / "class.db"))
    session, _ = store.create_session(_items(), CHOICES, session_ttl=0.01)
    time.sleep(0.05)
    assert cs.get_store(str(tmp_path / "class.db")) is store
    rows = "SELECT COUNT(*) FROM sessions WHERE id = ?"
    assert store._read(rows, (session.id,))[0][0] == 1  # not yet: the last purge was moments ago (and unreadable)
    with pytest.raises(ClassError, match="no longer exists"):
        store.session(session.id)
    monkeypatch.setattr(store, "purged", time.time() - cs.PURGE_EVERY - 1)
    cs.get_store(str(tmp_path / "class.db"))
    assert store._read(rows, (session.id,))[0][0] == 0


def test_sessions_per_address_are_capped(url):
    store = ClassStore(url, limits=Limits(sessions_per_client=3))
    for _ in range(3):
        _session(store, client="203.0.113.5")
    with pytest.raises(ClassError, match="has started 3 class sessions in the last 1 hour"):
        _session(store, client="203.0.113.5")
    _session(store, client="203.0.113.6")  # another address
    _session(store)  # trusted code (no address): not capped
    assert store._read("SELECT COUNT(*) FROM sessions")[0][0] == 5
    store.close()


def test_students_per_session_and_joins_per_address_are_capped(url):
    store = ClassStore(url, limits=Limits(students_per_session=5, joins_per_client=3))
    session, key = _session(store)
    for k in range(3):
        store.join(session.join_code, f"Student {k}", client="10.1.1.1")
    with pytest.raises(ClassError, match="3 students have already joined this class from this network address"):
        store.join(session.join_code, "Student 3", client="10.1.1.1")
    store.join(session.join_code, "Student 4", client="10.1.1.2")
    store.join(session.join_code, "Student 5")
    with pytest.raises(ClassError, match="This class is full: it has 5 students"):
        store.join(session.join_code, "Student 6", client="10.1.1.3")
    assert store.counts(session.id, key)["students"] == 5
    other, _ = _session(store)  # the cap is per session
    store.join(other.join_code, "Student 7", client="10.1.1.1")
    store.close()


def test_the_same_browser_joining_twice_is_one_voter(store):
    session, key = _session(store)
    first, token1 = store.join(session.join_code, "Quiet Otter", client="local", browser="browser-1")
    store.vote(token1, first.assigned[0], "yes")
    again, token2 = store.join(session.join_code, "Loud Heron", client="local", browser="browser-1")
    assert again.id == first.id and again.assigned == first.assigned and again.pseudonym == "Quiet Otter"
    assert store.student(token2).voted == {first.assigned[0]: "yes"}
    with pytest.raises(ClassError, match="not valid"):  # the first tab's token gave way to the new one
        store.student(token1)
    other, _ = store.join(session.join_code, "Other Owl", client="local", browser="browser-2")
    assert other.id != first.id
    assert store.counts(session.id, key)["students"] == 2
    again_elsewhere, _ = _session(store)  # the same browser in another session is a new student there
    assert store.join(again_elsewhere.join_code, "Quiet Otter", browser="browser-1")[0].id != first.id


@pytest.mark.parametrize(
    ("items", "choices", "said"),
    [
        ([Item("x" * 200_000, "p")], ("yes", "no"), "The item id 'xxx"),
        ([Item("a\x00b", "p")], ("yes", "no"), "control characters"),
        ([Item("a", "p")], ("yes", "n" * 1000), "longer than 40 characters"),
        ([Item("a", "p")], tuple(f"a{k}" for k in range(5000)), "5000 answers to choose from; a phone shows at most 8"),
        ([Item("a", "p" * 501)], ("yes", "no"), "longer than 500 characters"),
        ([Item(f"i{k}", "p") for k in range(501)], ("yes", "no"), "at most 500"),
        ([Item("a", "p")], ("yes", " "), "blank"),
    ],
)
def test_item_ids_answers_and_prompts_are_bounded(store, items, choices, said):
    with pytest.raises(ClassError, match=re.escape(said)):
        store.create_session(items, choices)
    assert store._read("SELECT COUNT(*) FROM sessions")[0][0] == 0


def test_a_nul_byte_in_a_title_code_prompt_or_name_is_no_database_error(store):
    """PostgreSQL refuses NUL in text (psycopg.DataError): titles and prompts lose control characters, a code with
    one is simply wrong, and any other text holding one is a ClassError with a sentence."""
    session, key = store.create_session([Item("a", "Is\x00 it?"), Item("b", "B")], CHOICES, title="Mon\x00day")
    assert store.session(session.id).title == "Mon day"
    assert store.items(session.id)[0].prompt == "Is it?"
    with pytest.raises(ClassError, match="No class session"):
        store.join(session.join_code[:3] + "\x00" + session.join_code[3:], "A")
    with pytest.raises(ClassError, match="No class session"):
        store.lecturer_session(session.join_code + "\x00", key)
    with pytest.raises(ClassError, match="NUL"):
        store.check_key(session.id + "\x00", key)
    with pytest.raises(ClassError):
        store.join(session.join_code, "Quiet\x00Otter")
    st, token = store.join(session.join_code, "Quiet Otter")
    with pytest.raises(ClassError):
        store.vote(token, st.assigned[0] + "\x00", "yes")
    with pytest.raises(ClassError):
        store.vote(token + "\x00", st.assigned[0], "yes")
    with pytest.raises(ClassError):
        store.rename(token, "New\x00Name")


def _on_disk(db) -> bytes:
    """Every byte of a SQLite database: the file, its write-ahead log and shared memory index."""
    return b"".join(p.read_bytes() for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))
                    if p.exists())  # fmt: skip


def test_a_deleted_session_leaves_nothing_readable_on_disk(tmp_path):
    """After Delete, names, prompts and titles are not in the SQLite file nor in its WAL (secure_delete zeroes the
    freed cells; a checkpoint empties the WAL that still held the old pages)."""
    db = tmp_path / "class.db"
    store = ClassStore(str(db))
    keep, _ = store.create_session([Item("k", "Keep this prompt")], CHOICES, title="Kept Class")
    items = [Item(f"s{k}", f"Zanzibar prompt {k}") for k in range(3)]
    session, key = store.create_session(items, CHOICES, title="Quetzalcoatl Seminar", per_student=3)
    st, token = store.join(session.join_code, "Xylophone Walrus")
    store.vote(token, st.assigned[0], "yes")
    store.students(session.id, key)  # a second pooled connection or two, as on a live server
    assert b"Xylophone Walrus" in _on_disk(db) and b"Quetzalcoatl" in _on_disk(db)
    store.delete_session(session.id, key)
    disk = _on_disk(db)
    for secret in (b"Xylophone Walrus", b"Zanzibar prompt", b"Quetzalcoatl Seminar", session.join_code.encode()):
        assert secret not in disk, secret
    assert b"Kept Class" in disk and store.session(keep.id).title == "Kept Class"
    # ... and so does an expired one, once purged
    old, _ = store.create_session([Item("o", "Obsidian prompt")], CHOICES, title="Obsidian Class", session_ttl=60)
    store.purge_expired(now=time.time() + 120)
    assert b"Obsidian" not in _on_disk(db)
    store.close()


def test_an_expired_session_is_not_readable_before_any_purge(store):
    session, key = _session(store, session_ttl=0.5)
    st, token = store.join(session.join_code, "Quiet Otter")
    time.sleep(0.6)
    reads = (
        lambda: store.session(session.id),
        lambda: store.check_key(session.id, key),
        lambda: store.item(session.id, "i0"),
        lambda: store.student(token),
        lambda: store.votes(session.id, key),
        lambda: store.lecturer_session(session.join_code, key),
    )
    for read in reads:
        with pytest.raises(ClassError, match="no longer exists|not valid"):
            read()
    assert store.items(session.id) == []
    assert store._read("SELECT COUNT(*) FROM sessions")[0][0] == 1  # not purged yet, and still unreadable


def test_the_process_store_purges_expired_sessions_by_itself(tmp_path, monkeypatch):
    monkeypatch.setattr(cs, "PURGE_EVERY", 0.2)
    monkeypatch.setattr(cs, "_STORES", {})
    url = str(tmp_path / "class.db")
    store = cs.get_store(url)
    store.create_session(_items(), CHOICES, session_ttl=0.3)
    deadline = time.time() + 10
    while store._read("SELECT COUNT(*) FROM sessions")[0][0] and time.time() < deadline:
        time.sleep(0.1)  # nobody uses the app: the background thread deletes it
    assert store._read("SELECT COUNT(*) FROM sessions")[0][0] == 0


def test_names_are_unique_in_a_session(store):
    session, key = _session(store)
    got = [store.join(session.join_code, "Quiet Otter")[0].pseudonym for _ in range(20)]
    assert got[:3] == ["Quiet Otter", "Quiet Otter 2", "Quiet Otter 3"] and len(set(got)) == 20
    assert store.join(session.join_code, "quiet otter")[0].pseudonym == "quiet otter 21"  # case does not tell apart
    long = "A" * cs.MAX_PSEUDONYM
    assert store.join(session.join_code, long)[0].pseudonym == long
    assert store.join(session.join_code, long)[0].pseudonym == "A" * (cs.MAX_PSEUDONYM - 2) + " 2"
    st, token = store.join(session.join_code, "Loud Heron")
    with pytest.raises(ClassError, match="already called QUIET OTTER"):
        store.rename(token, "QUIET OTTER")
    assert store.rename(token, "Loud Heron").pseudonym == "Loud Heron"  # its own name is not taken
    assert store.rename(token, "Calm Crane").pseudonym == "Calm Crane"
    other, _ = _session(store)  # another session has its own names
    assert store.join(other.join_code, "Quiet Otter")[0].pseudonym == "Quiet Otter"
    names = [s.pseudonym.casefold() for s in store.students(session.id, key)]
    assert len(names) == len(set(names))


# ---------------------------------------------------------------------------- issue 39 §2-3
def test_counts_say_who_is_still_answering_and_the_pace(store):
    session, key = _session(store)
    _, t1 = store.join(session.join_code, "Quiet Otter")
    _, t2 = store.join(session.join_code, "Brave Heron")
    s1 = store.student(t1)
    for item in s1.assigned:
        store.vote(t1, item, CHOICES[0])
    store.vote(t2, store.student(t2).assigned[0], CHOICES[0], now=time.time() - 3600)  # an hour ago: not in the pace
    c = store.counts(session.id, key)
    assert (c["students"], c["done"], c["answering"]) == (2, 1, 1)
    assert c["per_minute"] == len(s1.assigned)


def test_the_lecturer_removes_a_student_with_their_votes_and_predictions(store):
    session, key = _session(store)
    st1, t1 = store.join(session.join_code, "Quiet Otter")
    _, t2 = store.join(session.join_code, "Brave Heron")
    store.vote(t1, st1.assigned[0], CHOICES[0])
    qid = store.ask(session.id, key, "objective", "Up or down?", ["up", "stay", "down"], "up")
    store.predict(t1, qid, "down")
    with pytest.raises(ClassError, match="lecturer key"):
        store.remove_student(session.id, "wrong", st1.id)
    store.remove_student(session.id, key, st1.id)
    assert store.counts(session.id, key)["students"] == 1 and _n_votes(store, session.id, key) == 0
    assert store.question(session.id, key)["predicted"] == 0
    with pytest.raises(ClassError, match="not valid"):
        store.student(t1)
    with pytest.raises(ClassError, match="not in the session"):
        store.remove_student(session.id, key, st1.id)
    store.student(t2)  # the others stay


def test_predictions_are_idempotent_per_student_and_question(store):
    session, key = _session(store)
    _, t1 = store.join(session.join_code, "Quiet Otter")
    _, t2 = store.join(session.join_code, "Brave Heron")
    assert store.question_for(t1) is None and store.question(session.id, key) is None
    qid = store.ask(session.id, key, "trust", "Who will EM trust most?", ["Quiet Otter", "Brave Heron"], "Brave Heron")
    q = store.question_for(t1)
    assert q["prompt"] == "Who will EM trust most?" and q["status"] == "open" and "answer" not in q  # kept back
    store.predict(t1, qid, "Quiet Otter")
    store.predict(t1, qid, "Brave Heron")  # a second tap replaces the first
    store.predict(t2, qid, "Brave Heron")
    cur = store.question(session.id, key)
    assert cur["counts"] == {"Quiet Otter": 0, "Brave Heron": 2} and cur["predicted"] == 2 and cur["students"] == 2
    assert store.question_for(t1)["mine"] == "Brave Heron"
    store.reveal_question(session.id, key, qid)
    assert store.question_for(t2)["answer"] == "Brave Heron"
    with pytest.raises(ClassError, match="closed"):
        store.predict(t1, qid, "Quiet Otter")
    assert store.question(session.id, key)["counts"]["Brave Heron"] == 2  # nothing changed
    # a new question closes the old one; withdrawing leaves the phones without one
    q2 = store.ask(session.id, key, "objective", "Up?", ["up", "stay", "down"], "stay")
    assert store.question_for(t1)["id"] == q2 and store.question_for(t1)["mine"] is None
    store.withdraw_question(session.id, key)
    assert store.question_for(t1) is None


def test_predictions_are_checked_like_votes(store):
    session, key = _session(store)
    other, okey = _session(store)
    _, t1 = store.join(session.join_code, "Quiet Otter")
    with pytest.raises(ClassError, match="lecturer key"):
        store.ask(session.id, "wrong", "objective", "Up?", ["up", "down"], "up")
    with pytest.raises(ClassError, match="NUL"):
        store.ask(session.id, key, "objective", "Up?\x00", ["up", "down"], "up")
    with pytest.raises(ClassError, match="prompt"):
        store.ask(session.id, key, "objective", "x" * (cs.MAX_PROMPT + 1), ["up", "down"], "up")
    with pytest.raises(ClassError, match="answers"):
        store.ask(session.id, key, "objective", "Up?", ["up"], "up")
    with pytest.raises(ClassError, match="characters"):
        store.ask(session.id, key, "objective", "Up?", ["up", "d" * (cs.MAX_ANSWER + 1)], "up")
    with pytest.raises(ClassError, match="right answer"):
        store.ask(session.id, key, "objective", "Up?", ["up", "down"], "sideways")
    qid = store.ask(session.id, key, "objective", "Up?", ["up", "down"], "up")
    with pytest.raises(ClassError, match="not one of the question"):
        store.predict(t1, qid, "sideways")
    with pytest.raises(ClassError, match="NUL|not one of"):
        store.predict(t1, qid, "up\x00")
    oq = store.ask(other.id, okey, "objective", "Up?", ["up", "down"], "up")
    with pytest.raises(ClassError, match="not part of your class"):
        store.predict(t1, oq, "up")  # another session's question
    with pytest.raises(ClassError, match="not valid"):
        store.predict("forged", qid, "up")
    assert store.question(session.id, key)["predicted"] == 0


def test_predictions_share_the_students_rate_limit(tmp_path):
    store = ClassStore(str(tmp_path / "c.db"), limits=Limits(votes_per_window=3))
    session, key = _session(store)
    _, t1 = store.join(session.join_code, "Quiet Otter")
    qid = store.ask(session.id, key, "objective", "Up?", ["up", "down"], "up")
    now = time.time()
    for k in range(3):
        store.predict(t1, qid, ["up", "down"][k % 2], now=now)
    with pytest.raises(ClassError, match="too fast"):
        store.predict(t1, qid, "up", now=now)
    assert store.question_for(t1)["mine"] == "up"
    store.close()


def test_questions_per_session_are_capped(store, monkeypatch):
    monkeypatch.setattr(cs, "MAX_QUESTIONS", 2)
    session, key = _session(store)
    for _ in range(2):
        store.ask(session.id, key, "objective", "Up?", ["up", "down"], "up")
    with pytest.raises(ClassError, match="2 questions"):
        store.ask(session.id, key, "objective", "Up?", ["up", "down"], "up")


def test_deleting_a_session_deletes_its_questions_and_predictions(store):
    session, key = _session(store)
    _, t1 = store.join(session.join_code, "Quiet Otter")
    qid = store.ask(session.id, key, "objective", "Up?", ["up", "down"], "up")
    store.predict(t1, qid, "up")
    store.delete_session(session.id, key)
    assert store._read("SELECT COUNT(*) FROM predictions")[0][0] == 0
    assert store._read("SELECT COUNT(*) FROM questions")[0][0] == 0


def test_a_version_3_database_is_migrated_to_predictions(tmp_path):
    path = tmp_path / "old.db"
    old = ClassStore(str(path))
    session, key = _session(old)
    old.close()
    with sqlite3.connect(path) as conn:  # back to version 3: no questions, no predictions
        conn.execute("DROP TABLE predictions")
        conn.execute("DROP TABLE questions")
        conn.execute("DELETE FROM schema_version WHERE version = 4")
    again = ClassStore(str(path))
    assert again.schema_version() == cs.SCHEMA_VERSION == 4
    _, t1 = again.join(session.join_code, "Quiet Otter")
    qid = again.ask(session.id, key, "objective", "Up?", ["up", "down"], "up")
    again.predict(t1, qid, "up")
    assert again.question(session.id, key)["predicted"] == 1
    again.close()
