"""Live class sessions in a real database: the one data-access module (no SQL anywhere else in crowdlab).

Students' phones and the lecturer's projector are separate Streamlit sessions (and, behind a proxy, separate
processes), so everything they share lives here:

* **SQLite** (the default, nothing to install): a file ``class.db`` in the data folder, ``$CROWDLAB_DATA_DIR`` or
  else ``~/.local/share/crowdlab``, created on first use, in WAL mode (readers never block the writer).
* **PostgreSQL** when ``CROWDLAB_CLASS_DB=postgresql://user:pass@host/db`` (several app processes serving one class),
  through psycopg 3.

The schema is created and migrated by :meth:`ClassStore.migrate` (table ``schema_version``; each entry of
:data:`MIGRATIONS` runs once, in order). What keeps a room full of students safe is enforced here, not in a page:

* a join code is :data:`CODE_LENGTH` symbols from :data:`CODE_ALPHABET` (31 symbols, no 0/O/1/I/L), drawn by
  :mod:`secrets`, and expires; wrong codes are rate-limited per network address (the right code is looked up first:
  other addresses' guesses never keep a student out);
* the lecturer key and every student token are issued by the server (:func:`secrets.token_urlsafe`) and only their
  SHA-256 is stored (they carry 128+ random bits, so a plain hash cannot be reversed by trying);
* one vote per (student, item): a UNIQUE constraint and an upsert, so a repeat replaces and never duplicates;
  votes are refused after close, for an item not dealt to that student, for a label not among the session's
  choices, and above a per-student rate;
* what one visitor can add is capped (:class:`Limits` and the ``MAX_*`` constants): sessions per address, students
  per session and per address, one student per browser, names unique in a session, item ids, prompts and answers;
* sessions expire (unreadable from then on, deleted by :meth:`ClassStore.purge_expired`, which :func:`get_store`
  runs in the background); the lecturer can delete one at once, and on SQLite deleted rows are overwritten
  (``secure_delete``) and the WAL emptied, so nothing of a deleted session stays on disk;
* a PostgreSQL connection that breaks (the server restarts) is replaced and the call retried
  (:data:`RETRY_WAITS`); past that, :class:`ClassUnavailable` says the server is not answering and nothing was
  stored. A call that returned has committed.

Every refusal raises :class:`ClassError` with a message a person can act on; nothing is stored then.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import inspect
import json
import logging
import os
import queue
import random
import re
import secrets
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from crowdlab.errors import DataError

log = logging.getLogger(__name__)

__all__ = [
    "ClassError",
    "ClassStore",
    "ClassUnavailable",
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "ROLES",
    "data_dir",
    "default_url",
    "get_store",
    "normal_code",
]

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # 31 symbols: none that reads as another (0/O, 1/I/L)
CODE_LENGTH = 6  # 31**6 = 887 million codes
ROLES = ("honest", "spammer", "adversary", "lazy")
MAX_PSEUDONYM = 32
MAX_TITLE = 80
# what one session may hold (a visitor cannot fill the database or the phones: issue 39)
MAX_ITEMS = 500  # items in a session
MAX_ITEM_ID = 64  # characters of an item id
MAX_PROMPT = 500  # characters of a prompt
MAX_CHOICES = 8  # answers to choose from (the Join page draws a button for each)
MAX_ANSWER = 40  # characters of an answer
SCHEMA_VERSION = 4
MAX_QUESTIONS = 200  # predict-then-reveal questions one session may hold
PACE_WINDOW = 60.0  # seconds: the projector's pace is the votes counted in the last minute
PURGE_EVERY = 600.0  # seconds between looks for expired sessions (get_store)


RETRY_WAITS = (0.1, 0.4, 1.0)  # seconds between tries of a call whose PostgreSQL connection was lost
CONNECT_TIMEOUT = 3  # seconds to open a PostgreSQL connection


class ClassError(DataError):
    """A class-session action refused (wrong or expired code, bad token, vote after close, ...)."""


class ClassUnavailable(ClassError):
    """The class database does not answer (PostgreSQL down or restarting): nothing was stored; try again."""


class _Lost(Exception):
    """A PostgreSQL connection broke during a call (the server stopped, restarted or dropped it)."""


def _retrying(method):
    """Run a store method again, on fresh connections, when its PostgreSQL connection was lost: up to
    ``len(RETRY_WAITS)`` more tries, then :class:`ClassUnavailable`. Each try is a whole call (its transactions are
    idempotent: a vote is an upsert, a join from one browser returns its student). Calls inside a call are retried
    by the outermost one only."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if getattr(self._local, "depth", 0):
            return method(self, *args, **kwargs)
        last: BaseException | None = None
        for attempt in range(len(RETRY_WAITS) + 1):
            self._local.depth = 1
            try:
                return method(self, *args, **kwargs)
            except _Lost as exc:
                last = exc.__cause__ or exc
                log.warning("class database connection lost in %s (try %d): %s", method.__name__, attempt + 1, last)
            finally:
                self._local.depth = 0
            if attempt < len(RETRY_WAITS):
                time.sleep(RETRY_WAITS[attempt])
        raise ClassUnavailable("The class server is not answering.", hint="Try again in a moment.") from last

    return wrapper


def data_dir() -> Path:
    """The data folder: ``$CROWDLAB_DATA_DIR``, else ``$XDG_DATA_HOME/crowdlab``, else ``~/.local/share/crowdlab``."""
    env = os.environ.get("CROWDLAB_DATA_DIR")
    if env:
        try:
            return Path(env).expanduser()
        except RuntimeError as exc:  # "~user" of no user
            raise cannot_open(env, exc) from None
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share") / "crowdlab"


def default_url() -> str:
    """``$CROWDLAB_CLASS_DB`` (a ``postgresql://`` URL or a SQLite file path), else ``<data folder>/class.db``."""
    return os.environ.get("CROWDLAB_CLASS_DB") or str(data_dir() / "class.db")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def normal_code(code: str) -> str:
    """A typed join code in its stored form: upper case, spaces and dashes dropped."""
    return "".join(str(code).split()).replace("-", "").upper()


def _free_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name 2``, ``name 3``, ... (cut to fit :data:`MAX_PSEUDONYM`): the first that no one in the
    session has (``taken``: their names, casefolded). Two students never share a name."""
    k = 1
    candidate = name
    while candidate.casefold() in taken:
        k += 1
        suffix = f" {k}"
        candidate = name[: MAX_PSEUDONYM - len(suffix)].rstrip() + suffix
    return candidate


def well_formed_code(code: str) -> bool:
    """Whether ``code`` (in :func:`normal_code` form) could be a join code at all."""
    return len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code)


def check_pseudonym(name: str) -> str:
    """``name`` trimmed, or ClassError: 1-32 characters of letters, digits, spaces and ``- ' . _`` only (a name is
    shown on the projector: no markup, no control characters, no look-alike tricks)."""
    s = unicodedata.normalize("NFC", str(name)).strip()
    s = " ".join(s.split())
    if not s:
        raise ClassError("The name is empty.", hint="Type a name of 1 to 32 letters, or keep the one offered.")
    if len(s) > MAX_PSEUDONYM:
        raise ClassError(f"The name is longer than {MAX_PSEUDONYM} characters.", hint="Choose a shorter name.")
    bad = sorted({c for c in s if not (c.isalnum() or c in " -'._")})
    if bad:
        shown = " ".join(repr(c) for c in bad[:5])
        raise ClassError(
            f"The name holds characters a name may not: {shown}.",
            hint="Use letters, digits, spaces and - ' . _ only.",
        )
    return s


def _check_set(items: Sequence[Item], choices: Sequence[str]) -> None:
    """ClassError unless the items and answers fit a session (sizes, lengths, distinct ids, truths among answers)."""
    if len(items) < 1:
        raise ClassError("The item set is empty.", hint="Generate items or upload a CSV with at least one row.")
    if len(items) > MAX_ITEMS:
        raise ClassError(f"The item set has {len(items):,} items; a class labels at most {MAX_ITEMS}.")
    if len(choices) < 2 or len(set(choices)) != len(choices):
        raise ClassError("A session needs at least two distinct answers to choose from.")
    if len(choices) > MAX_CHOICES:
        raise ClassError(
            f"There are {len(choices)} answers to choose from; a phone shows at most {MAX_CHOICES}.",
            hint="Merge or drop some answers.",
        )
    for c in choices:
        if not c.strip() or len(c) > MAX_ANSWER or any(unicodedata.category(x) == "Cc" for x in c):
            raise ClassError(
                f"The answer {_short(c)} is blank, longer than {MAX_ANSWER} characters, or holds control characters.",
                hint=f"Give each answer 1 to {MAX_ANSWER} printable characters.",
            )
    ids = [it.item_id for it in items]
    for it in items:
        i = str(it.item_id)
        if not i or len(i) > MAX_ITEM_ID or any(unicodedata.category(x) == "Cc" for x in i):
            raise ClassError(
                f"The item id {_short(i)} is blank, longer than {MAX_ITEM_ID} characters, or holds control characters.",
                hint=f"Give each item an id of 1 to {MAX_ITEM_ID} printable characters.",
            )
        if len(str(it.prompt)) > MAX_PROMPT:
            raise ClassError(f"The prompt of item {_short(i)} is longer than {MAX_PROMPT} characters.")
    if len(set(ids)) != len(ids):
        raise ClassError("Two items share an id.", hint="Give every item its own id.")
    for it in items:
        if it.truth is not None and it.truth not in choices:
            raise ClassError(f"The truth of item {_short(it.item_id)} is not one of the answers.")


def _storable(params: Sequence) -> Sequence:
    """``params``, or ClassError when a text holds a NUL character (PostgreSQL cannot store one; SQLite would cut
    the text there)."""
    for v in params:
        if isinstance(v, str) and "\x00" in v:
            raise ClassError("A text holds a NUL character, which cannot be stored.", hint="Remove it and try again.")
    return params


def _printable(text: str) -> str:
    """``text`` with control characters (NUL, escapes, line breaks) made spaces and runs of spaces made one."""
    return " ".join("".join(" " if unicodedata.category(c) == "Cc" else c for c in str(text)).split())


def _short(text: str, n: int = 40) -> str:
    """``text`` quoted for a message, cut to ``n`` characters."""
    text = str(text)
    return repr(text if len(text) <= n else text[:n] + "...")


# ---------------------------------------------------------------------------- schema
# each migration: (version, statements); ``{blob}`` is BLOB (SQLite) or BYTEA (PostgreSQL)
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                join_code TEXT NOT NULL UNIQUE,
                key_hash TEXT NOT NULL,
                title TEXT NOT NULL,
                choices TEXT NOT NULL,
                per_student INTEGER NOT NULL,
                shares TEXT NOT NULL,
                status TEXT NOT NULL,
                created DOUBLE PRECISION NOT NULL,
                code_expires DOUBLE PRECISION NOT NULL,
                expires DOUBLE PRECISION NOT NULL,
                reveal TEXT
            )""",
            """CREATE TABLE items (
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                item_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                prompt TEXT NOT NULL,
                truth TEXT,
                difficulty DOUBLE PRECISION,
                svg TEXT,
                image {blob},
                PRIMARY KEY (session_id, item_id)
            )""",
            """CREATE TABLE students (
                id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                token_hash TEXT NOT NULL UNIQUE,
                pseudonym TEXT NOT NULL,
                role TEXT NOT NULL,
                seq INTEGER NOT NULL,
                assigned TEXT NOT NULL,
                joined DOUBLE PRECISION NOT NULL,
                rl_start DOUBLE PRECISION NOT NULL,
                rl_count INTEGER NOT NULL
            )""",
            "CREATE INDEX students_session ON students (session_id)",
            """CREATE TABLE votes (
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                student_id TEXT NOT NULL REFERENCES students(id) ON DELETE CASCADE,
                item_id TEXT NOT NULL,
                label TEXT NOT NULL,
                voted DOUBLE PRECISION NOT NULL,
                UNIQUE (student_id, item_id)
            )""",
            "CREATE INDEX votes_session ON votes (session_id)",
            """CREATE TABLE rate_limits (
                bucket TEXT PRIMARY KEY,
                window_start DOUBLE PRECISION NOT NULL,
                hits INTEGER NOT NULL
            )""",
        ),
    ),
    # next-item routing: a session may hand each student's next item to the least certain one
    (2, ("ALTER TABLE sessions ADD COLUMN routing INTEGER NOT NULL DEFAULT 0",)),
    # who joined from where: the hashed network address (joins per address) and browser (one browser, one student)
    (
        3,
        (
            "ALTER TABLE students ADD COLUMN client TEXT",
            "ALTER TABLE students ADD COLUMN browser TEXT",
            "CREATE INDEX students_client ON students (session_id, client)",
            "CREATE INDEX students_browser ON students (session_id, browser)",
        ),
    ),
    # predict, then reveal: the lecturer's questions about the next half-step, and each student's prediction
    # (idempotent per (student, question), like votes); the right answer is computed from the run when asked
    (
        4,
        (
            """CREATE TABLE questions (
                id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                kind TEXT NOT NULL,
                prompt TEXT NOT NULL,
                options TEXT NOT NULL,
                answer TEXT NOT NULL,
                status TEXT NOT NULL,
                asked DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX questions_session ON questions (session_id, seq)",
            """CREATE TABLE predictions (
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                question_id TEXT NOT NULL REFERENCES questions(id) ON DELETE CASCADE,
                student_id TEXT NOT NULL REFERENCES students(id) ON DELETE CASCADE,
                choice TEXT NOT NULL,
                predicted DOUBLE PRECISION NOT NULL,
                UNIQUE (student_id, question_id)
            )""",
            "CREATE INDEX predictions_question ON predictions (question_id)",
        ),
    ),
)


@dataclass(frozen=True)
class Item:
    """One item of a session: its id, prompt, optional truth and difficulty, and an SVG or image to show."""

    item_id: str
    prompt: str
    truth: str | None = None
    difficulty: float | None = None
    svg: str | None = None
    image: bytes | None = None


@dataclass(frozen=True)
class Session:
    id: str
    join_code: str
    title: str
    choices: tuple[str, ...]
    per_student: int
    shares: dict
    status: str  # "open", "closed"
    created: float
    code_expires: float
    expires: float
    reveal: dict | None = None
    routing: bool = False  # each student's next item is chosen when they ask for it (see ClassStore.next_item)


@dataclass(frozen=True)
class Student:
    id: str
    session_id: str
    pseudonym: str
    role: str
    assigned: tuple[str, ...]
    voted: dict = field(default_factory=dict)  # item id -> label


@dataclass(frozen=True)
class Limits:
    """How long things live and how fast they may happen (seconds)."""

    code_ttl: float = 3 * 3600  # a join code works this long after the session starts
    session_ttl: float = 24 * 3600  # then the session and everything in it is deleted
    votes_per_window: int = 30  # a student's votes per window (a person taps about once a second at most)
    vote_window: float = 30.0
    # wrong codes one network address may try per window; then that address (the guesser) is refused for the rest of
    # the window. There is no limit across addresses: it would let one visitor lock every student out.
    join_failures_per_client: int = 20
    join_window: float = 300.0
    sessions_per_client: int = 10  # sessions one network address may start per session window
    session_window: float = 3600.0
    students_per_session: int = 500  # students in one session
    joins_per_client: int = 60  # students one network address may add to one session


# ---------------------------------------------------------------------------- the store
def _store_errors(postgres: bool) -> tuple[type[BaseException], ...]:
    """What opening the database raises when the place it names cannot hold one (a file as the data folder, a
    folder as the database, no server at the URL)."""
    if postgres:
        try:
            import psycopg

            return (OSError, RuntimeError, psycopg.Error)
        except ImportError:
            return (OSError, RuntimeError)
    return (OSError, RuntimeError, sqlite3.Error)  # RuntimeError: expanduser of "~user" of no user


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def _where(url: str) -> str:
    """The class database named for a visitor: a SQLite file's path, or a PostgreSQL database's host and name only
    (never a user, password or other connection option)."""
    if not _is_postgres(url):
        return f"SQLite file {url!r}"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        query = parse_qs(parts.query)
        db = parts.path.lstrip("/") or (query.get("dbname") or [""])[0]
        host = host or (query.get("host") or ["localhost"])[0]
    except ValueError:
        return "PostgreSQL database (its postgresql:// URL cannot be read)"
    return f"PostgreSQL database {db or '(default)'!r} on {host}"


def check_url(url: str) -> None:
    """ClassError unless the store can serve ``url``: a ``postgresql://`` URL, or a SQLite file path (not
    ``:memory:``, where each pooled connection would be its own empty database, and not another scheme's URL, which
    would become a folder named after it)."""
    if _is_postgres(url):
        return
    text = url.strip()
    if not text or text == ":memory:" or text.startswith("file:") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        why = (
            "an in-memory database would be a different empty database for every connection"
            if ":memory:" in text or "mode=memory" in text
            else "it is neither a file path nor a postgresql:// URL"
        )
        shown = _where(url) if _is_postgres(url) else repr(text.split("@")[-1][:80] if "://" in text else text[:80])
        raise ClassError(
            f"The class database {shown} cannot be used: {why}.",
            hint=f"Set {_setting()}, and start the app again.",
        )


def cannot_open(url: str, exc: BaseException) -> ClassError:
    """The ClassError of a class database that cannot be opened, naming the setting that chose the place. A
    PostgreSQL database is named by host and database only; the full error (which may hold the URL) goes to the
    log."""
    log.error("the class database cannot be opened: %s: %s", type(exc).__name__, exc)
    if _is_postgres(url):
        said = "no server answers there, or it refused the connection; the app's log has the details"
    else:
        said = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300].rstrip(".")
        said = f"{type(exc).__name__}: {said}"
    return ClassError(
        f"the class database ({_where(url)}) cannot be opened ({said}).",
        hint=f"Set {_setting()}, and start the app again.",
    )


def _deal(deal: Callable, counts: dict[str, int], shares: dict[str, float], rng: random.Random) -> str:
    """``deal(counts, shares)``, with ``rng=`` when it takes one (:func:`crowdlab.classroom.items.deal_role` does)."""
    try:
        takes_rng = "rng" in inspect.signature(deal).parameters
    except (TypeError, ValueError):  # a callable without a signature (a builtin)
        takes_rng = False
    return deal(counts, shares, rng=rng) if takes_rng else deal(counts, shares)


def _setting() -> str:
    """The setting that chose the class database, and what it must be."""
    if os.environ.get("CROWDLAB_CLASS_DB"):
        return (
            "CROWDLAB_CLASS_DB (a SQLite file in a folder this user may write, e.g. /srv/crowdlab/class.db, or a "
            "postgresql:// URL of a running server)"
        )
    if os.environ.get("CROWDLAB_DATA_DIR"):
        return "CROWDLAB_DATA_DIR (a folder this user may write)"
    return "CROWDLAB_DATA_DIR to a folder this user may write, or CROWDLAB_CLASS_DB"


class ClassStore:
    """Class sessions in SQLite (a file path) or PostgreSQL (a ``postgresql://`` URL); thread-safe (a small pool
    of connections, one per concurrent call).

    ``rng``: the random source of what is dealt at random to a joining student (the order of their items, and the
    roles' ties when ``join`` is given ``deal=`` :func:`crowdlab.classroom.items.deal_role`); the operating system's
    (:class:`secrets.SystemRandom`) by default. Tests pass ``random.Random(seed)`` so a simulated class is the same
    class every run. Tokens, keys and join codes always come from :mod:`secrets`, whatever ``rng`` is."""

    def __init__(
        self,
        url: str | None = None,
        *,
        limits: Limits | None = None,
        pool_size: int = 8,
        rng: random.Random | None = None,
    ) -> None:
        self.url = url or default_url()
        self.rng = rng if rng is not None else secrets.SystemRandom()
        check_url(self.url)
        self.limits = limits or Limits()
        self.postgres = _is_postgres(self.url)
        self.purged = 0.0
        self._pool: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(pool_size)
        self._all: list = []
        self._lock = threading.Lock()
        self._local = threading.local()
        try:
            if not self.postgres:
                Path(self.url).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self.migrate()
        except ClassUnavailable as exc:  # no server answers at the URL
            raise cannot_open(self.url, exc.__cause__ or exc) from None
        except _store_errors(self.postgres) as exc:
            raise cannot_open(self.url, exc) from None
        self.purge_expired()

    # ---------------------------------------------------------------- connections
    def _connect(self):
        if self.postgres:
            import psycopg

            return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        conn = sqlite3.connect(
            str(Path(self.url).expanduser()), timeout=30, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # durable at each checkpoint; WAL keeps the file consistent
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA secure_delete=ON")  # deleted rows are overwritten with zeros, not left in free pages
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _lost_errors(self) -> tuple[type[BaseException], ...]:
        """What a broken PostgreSQL connection raises (nothing counts as lost on SQLite: a file does not go away)."""
        if not self.postgres:
            return ()
        import psycopg

        return (psycopg.OperationalError, psycopg.InterfaceError)

    def _discard(self, conn) -> None:
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
        with contextlib.suppress(Exception):
            conn.close()

    @contextlib.contextmanager
    def _conn(self) -> Iterator:
        """A connection of the pool (a new one when none is free or the free one is closed). A PostgreSQL connection
        that breaks in use is discarded and the call raises :class:`_Lost` (see :func:`_retrying`)."""
        lost = self._lost_errors()
        self._slots.acquire()
        try:
            conn = None
            with contextlib.suppress(queue.Empty):
                conn = self._pool.get_nowait()
                if self.postgres and conn.closed:  # the server went away since it was last used
                    self._discard(conn)
                    conn = None
            if conn is None:
                try:
                    conn = self._connect()
                except lost as exc:
                    raise _Lost(exc) from exc
                with self._lock:
                    self._all.append(conn)
            try:
                yield conn
            except lost as exc:  # the server went away: every pooled connection to it is dead too
                self._discard(conn)
                conn = None
                with contextlib.suppress(queue.Empty):
                    while True:
                        self._discard(self._pool.get_nowait())
                raise _Lost(exc) from exc
            finally:
                if conn is not None:
                    self._pool.put(conn)
        finally:
            self._slots.release()

    def _sql(self, q: str) -> str:
        return q.replace("?", "%s") if self.postgres else q

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Callable]:
        """A write transaction: yields ``run(sql, params) -> cursor``; commits at the end, rolls back on error."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE" if not self.postgres else "BEGIN")
            try:
                yield lambda q, p=(): conn.execute(self._sql(q), _storable(p))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, q: str, p: Sequence = ()) -> list[tuple]:
        with self._conn() as conn:
            return list(conn.execute(self._sql(q), _storable(p)).fetchall())

    def close(self) -> None:
        """Close every pooled connection (the store must not be used afterwards)."""
        with self._lock:
            for conn in self._all:
                with contextlib.suppress(Exception):
                    conn.close()
            self._all.clear()

    # ---------------------------------------------------------------- schema
    @_retrying
    def schema_version(self) -> int:
        rows = self._read("SELECT MAX(version) FROM schema_version")
        return int(rows[0][0] or 0)

    @_retrying
    def migrate(self) -> int:
        """Create the tables, or bring an older schema up to :data:`SCHEMA_VERSION`; returns the version."""
        blob = "BYTEA" if self.postgres else "BLOB"
        with self._tx() as run:
            if self.postgres:  # one migrating process at a time
                run("SELECT pg_advisory_xact_lock(2027)")
            run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION)")
            have = int(run("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0)
            for version, statements in MIGRATIONS:
                if version <= have:
                    continue
                for statement in statements:
                    run(statement.replace("{blob}", blob))
                run("INSERT INTO schema_version (version, applied) VALUES (?, ?)", (version, time.time()))
        return self.schema_version()

    def _count_answer(self, run: Callable, student_id: str, now: float) -> None:
        """One answer (a vote or a prediction) against the student's rate limit, in the caller's transaction;
        past :attr:`Limits.votes_per_window` in a window it is refused."""
        lim = self.limits
        hits = run(
            "UPDATE students SET rl_count = CASE WHEN ? - rl_start > ? THEN 1 ELSE rl_count + 1 END, "
            "rl_start = CASE WHEN ? - rl_start > ? THEN ? ELSE rl_start END WHERE id = ? RETURNING rl_count",
            (now, lim.vote_window, now, lim.vote_window, now, student_id),
        ).fetchone()[0]
        if int(hits) > lim.votes_per_window:
            raise ClassError("Too many answers too fast.", hint="Wait a few seconds, then answer again.")

    # ---------------------------------------------------------------- rate limits
    def _hit(self, run: Callable, bucket: str, limit: int, window: float, now: float) -> bool:
        """Count one hit on ``bucket``; False when the window already holds ``limit`` hits."""
        row = run(
            "INSERT INTO rate_limits (bucket, window_start, hits) VALUES (?, ?, 1) ON CONFLICT (bucket) DO UPDATE SET "
            "hits = CASE WHEN ? - rate_limits.window_start > ? THEN 1 ELSE rate_limits.hits + 1 END, "
            "window_start = CASE WHEN ? - rate_limits.window_start > ? THEN ? ELSE rate_limits.window_start END "
            "RETURNING hits",
            (bucket, now, now, window, now, window, now),
        ).fetchone()
        return int(row[0]) <= limit

    @_retrying
    def wrong_tries(self, kind: str, client: str, *, now: float | None = None) -> int:
        """How many wrong ``kind`` (e.g. "secret") this network address tried in the current join window."""
        return self._failures(f"{kind}:" + _hash(str(client)), time.time() if now is None else now)

    @_retrying
    def add_wrong_try(self, kind: str, client: str, *, now: float | None = None) -> None:
        """Count one wrong ``kind`` from this network address (see :meth:`wrong_tries`)."""
        now = time.time() if now is None else now
        with self._tx() as run:
            self._hit(run, f"{kind}:" + _hash(str(client)), self.limits.join_failures_per_client,
                      self.limits.join_window, now)  # fmt: skip

    def _failures(self, bucket: str, now: float) -> int:
        rows = self._read("SELECT window_start, hits FROM rate_limits WHERE bucket = ?", (bucket,))
        if not rows or now - rows[0][0] > self.limits.join_window:
            return 0
        return int(rows[0][1])

    # ---------------------------------------------------------------- lecturer
    @_retrying
    def create_session(
        self,
        items: Sequence[Item],
        choices: Sequence[str],
        *,
        title: str = "Class",
        per_student: int = 10,
        shares: dict | None = None,
        code_ttl: float | None = None,
        session_ttl: float | None = None,
        routing: bool = False,
        client: str | None = None,
    ) -> tuple[Session, str]:
        """A new open session; returns it and the lecturer key (shown once: only its hash is stored). With
        ``routing`` a student's items are not dealt at join but one at a time, by :meth:`next_item`. ``client``
        (the network address of the page that asks; None: trusted code) may start
        :attr:`Limits.sessions_per_client` sessions per :attr:`Limits.session_window`."""
        items = list(items)
        choices = tuple(str(c) for c in choices)
        _check_set(items, choices)
        per_student = max(1, min(int(per_student), len(items)))
        shares = {r: float(v) for r, v in (shares or {"honest": 1.0}).items() if r in ROLES and float(v) > 0}
        if not shares:
            shares = {"honest": 1.0}
        now = time.time()
        key = secrets.token_urlsafe(24)
        sid = secrets.token_hex(12)
        title = _printable(title)[:MAX_TITLE] or "Class"
        code_ttl = self.limits.code_ttl if code_ttl is None else code_ttl
        session_ttl = self.limits.session_ttl if session_ttl is None else session_ttl
        self.purge_expired()
        if client is not None:
            lim = self.limits
            with self._tx() as run:
                fresh = self._hit(run, "create:" + _hash(str(client)), lim.sessions_per_client, lim.session_window, now)
            if not fresh:
                raise ClassError(
                    f"This network address has started {lim.sessions_per_client} class sessions in the last "
                    f"{lim.session_window / 3600:g} hour(s), the most it may.",
                    hint="Resume one of them (join code and lecturer key), or wait an hour.",
                )
        for _ in range(20):  # a collision with a live code is rare (887 million codes); draw again
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            try:
                with self._tx() as run:
                    run(
                        "INSERT INTO sessions (id, join_code, key_hash, title, choices, per_student, shares, status, "
                        "created, code_expires, expires, routing) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, ?)",
                        (sid, code, _hash(key), title, json.dumps(choices), per_student, json.dumps(shares), now,
                         now + code_ttl, now + session_ttl, int(bool(routing))),
                    )  # fmt: skip
                    for pos, it in enumerate(items):
                        run(
                            "INSERT INTO items (session_id, item_id, position, prompt, truth, difficulty, svg, image) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (sid, it.item_id, pos, _printable(it.prompt), it.truth, it.difficulty, it.svg, it.image),
                        )
                break
            except Exception as exc:  # a unique violation on join_code: draw another
                if "join_code" not in str(exc) and "unique" not in str(exc).lower():
                    raise
        else:  # pragma: no cover
            raise ClassError("Could not draw a free join code; try again.")
        return self.session(sid), key

    @_retrying
    def session(self, session_id: str) -> Session:
        rows = self._read(
            "SELECT id, join_code, title, choices, per_student, shares, status, created, code_expires, expires, "
            "reveal, routing FROM sessions WHERE id = ? AND expires >= ?",
            (session_id, time.time()),
        )
        if not rows:  # an expired session is gone, whether or not a purge has deleted it yet
            raise ClassError("This class session no longer exists (it was deleted or it expired).")
        r = rows[0]
        return Session(
            r[0], r[1], r[2], tuple(json.loads(r[3])), int(r[4]), json.loads(r[5]), r[6], float(r[7]),
            float(r[8]), float(r[9]), json.loads(r[10]) if r[10] else None, bool(r[11]),
        )  # fmt: skip

    @_retrying
    def lecturer_session(self, join_code: str, key: str) -> Session:
        """The session with this code whose lecturer key is ``key`` (to resume after a restart)."""
        code = normal_code(join_code)
        rows = self._read("SELECT id FROM sessions WHERE join_code = ?", (code,)) if well_formed_code(code) else []
        if not rows:
            raise ClassError("No class session has this code.", hint="Check the code shown on the projector.")
        self.check_key(rows[0][0], key)
        return self.session(rows[0][0])

    @_retrying
    def check_key(self, session_id: str, key: str | None) -> str:
        """ClassError unless ``key`` is the session's lecturer key; returns the session's status."""
        rows = self._read("SELECT key_hash, expires, status FROM sessions WHERE id = ?", (session_id,))
        if not rows or rows[0][1] < time.time():
            raise ClassError("This class session no longer exists (it was deleted or it expired).")
        if not key or not hmac.compare_digest(rows[0][0], _hash(str(key))):
            raise ClassError(
                "The lecturer key is wrong.", hint="Lecturer controls need the key shown when the session started."
            )
        return rows[0][2]

    @_retrying
    def set_status(self, session_id: str, key: str, status: str) -> None:
        """Close ("closed") or reopen ("open") voting."""
        if status not in ("open", "closed"):
            raise ValueError(status)
        self.check_key(session_id, key)
        with self._tx() as run:
            run("UPDATE sessions SET status = ? WHERE id = ?", (status, session_id))

    @_retrying
    def set_reveal(self, session_id: str, key: str, reveal: dict | None) -> None:
        """Store what EM estimated (per student and per role); students see their part once it is set."""
        self.check_key(session_id, key)
        with self._tx() as run:
            run(
                "UPDATE sessions SET reveal = ?, status = 'closed' WHERE id = ?",
                (None if reveal is None else json.dumps(reveal), session_id),
            )

    @_retrying
    def delete_session(self, session_id: str, key: str) -> None:
        """Delete the session, its items, students and votes now."""
        self.check_key(session_id, key)
        self._delete([session_id])

    def _delete(self, ids: Sequence[str]) -> None:
        with self._tx() as run:
            for sid in ids:  # children first: PostgreSQL and SQLite both cascade, this keeps it explicit
                run("DELETE FROM predictions WHERE session_id = ?", (sid,))
                run("DELETE FROM questions WHERE session_id = ?", (sid,))
                run("DELETE FROM votes WHERE session_id = ?", (sid,))
                run("DELETE FROM students WHERE session_id = ?", (sid,))
                run("DELETE FROM items WHERE session_id = ?", (sid,))
                run("DELETE FROM sessions WHERE id = ?", (sid,))
        if not self.postgres:  # the WAL still holds the pages as they were: copy them back and empty it
            with self._conn() as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    @_retrying
    def purge_expired(self, now: float | None = None) -> int:
        """Delete every session past its expiry (and old rate-limit windows); returns how many sessions went."""
        now = time.time() if now is None else now
        self.purged = time.time()
        ids = [r[0] for r in self._read("SELECT id FROM sessions WHERE expires < ?", (now,))]
        if ids:
            self._delete(ids)
        window = max(self.limits.join_window, self.limits.vote_window, self.limits.session_window)
        with self._tx() as run:
            run("DELETE FROM rate_limits WHERE window_start < ?", (now - window,))
        return len(ids)

    @_retrying
    def items(self, session_id: str) -> list[Item]:
        rows = self._read(
            "SELECT item_id, prompt, truth, difficulty, svg, image FROM items WHERE session_id = ? AND "
            "EXISTS (SELECT 1 FROM sessions WHERE id = ? AND expires >= ?) ORDER BY position",
            (session_id, session_id, time.time()),
        )
        return [Item(r[0], r[1], r[2], r[3], r[4], None if r[5] is None else bytes(r[5])) for r in rows]

    @_retrying
    def item(self, session_id: str, item_id: str) -> Item:
        rows = self._read(
            "SELECT item_id, prompt, truth, difficulty, svg, image FROM items WHERE session_id = ? AND item_id = ? AND "
            "EXISTS (SELECT 1 FROM sessions WHERE id = ? AND expires >= ?)",
            (session_id, item_id, session_id, time.time()),
        )
        if not rows:
            self.session(session_id)  # "no longer exists" when the session is gone
            raise ClassError("This item is not part of the session.")
        r = rows[0]
        return Item(r[0], r[1], r[2], r[3], r[4], None if r[5] is None else bytes(r[5]))

    @_retrying
    def counts(self, session_id: str, key: str) -> dict:
        """The projector's numbers: the session's status, students joined and done, votes in all, votes per item
        and answer, how many are still answering and the pace (votes in the last minute; five queries, six with
        routing)."""
        status = self.check_key(session_id, key)
        session = self.session(session_id)
        per = self._read(
            "SELECT item_id, label, COUNT(*) FROM votes WHERE session_id = ? GROUP BY item_id, label", (session_id,)
        )
        students = self._read(
            "SELECT s.id, s.assigned, COUNT(v.item_id) FROM students s LEFT JOIN votes v ON v.student_id = s.id "
            "WHERE s.session_id = ? GROUP BY s.id, s.assigned",
            (session_id,),
        )
        recent = self._read(
            "SELECT COUNT(*) FROM votes WHERE session_id = ? AND voted >= ?", (session_id, time.time() - PACE_WINDOW)
        )
        by_item: dict[str, dict[str, int]] = {}
        for item_id, label, n in per:
            by_item.setdefault(item_id, {})[label] = int(n)
        if session.routing:  # items are handed one at a time: done is all of per_student (or every item) answered
            n_items = int(self._read("SELECT COUNT(*) FROM items WHERE session_id = ?", (session_id,))[0][0])
            done = sum(1 for _, _, n in students if int(n) >= min(session.per_student, n_items))
        else:
            done = sum(1 for _, assigned, n in students if int(n) >= len(json.loads(assigned)))
        return {
            "status": status,
            "students": len(students),
            "done": done,
            "votes": sum(int(r[2]) for r in per),
            "by_item": by_item,
            "answering": len(students) - done,  # joined and not done yet
            "per_minute": int(recent[0][0]) * 60.0 / PACE_WINDOW,  # votes counted in the last minute
        }

    @_retrying
    def votes(self, session_id: str, key: str) -> list[dict]:
        """Every vote with the student's pseudonym and role, the item's prompt and truth (for export and EM)."""
        self.check_key(session_id, key)
        rows = self._read(
            "SELECT s.id, s.pseudonym, s.role, v.item_id, i.prompt, i.truth, v.label, v.voted FROM votes v "
            "JOIN students s ON s.id = v.student_id JOIN items i ON i.session_id = v.session_id AND "
            "i.item_id = v.item_id WHERE v.session_id = ? ORDER BY v.voted, s.id, v.item_id",
            (session_id,),
        )
        cols = ("student_id", "pseudonym", "role", "item_id", "prompt", "truth", "label", "voted")
        return [dict(zip(cols, r, strict=True)) for r in rows]

    @_retrying
    def students(self, session_id: str, key: str) -> list[Student]:
        self.check_key(session_id, key)
        rows = self._read(
            "SELECT id, session_id, pseudonym, role, assigned FROM students WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [Student(r[0], r[1], r[2], r[3], tuple(json.loads(r[4]))) for r in rows]

    # ---------------------------------------------------------------- students
    @_retrying
    def join(
        self,
        join_code: str,
        pseudonym: str,
        *,
        client: str | None = None,
        deal: Callable[[dict[str, int], dict[str, float]], str] | None = None,
        now: float | None = None,
        browser: str | None = None,
    ) -> tuple[Student, str]:
        """A new student in the session with ``join_code``; returns the student and their token (kept by their
        browser; only its hash is stored). ``deal(counts, shares)`` picks the secret role from the roles dealt so
        far (honest when not given); a ``deal`` that takes an ``rng`` keyword gets the store's random source.

        ``client`` is the network address the attempt comes from: wrong codes count against it alone, and past
        :attr:`Limits.join_failures_per_client` of them in a window it is refused, right code included (it is the
        guesser); no other address's guesses ever refuse a right code. One address adds at most
        :attr:`Limits.joins_per_client` students to a session (None: trusted code, no cap), a session holds at most
        :attr:`Limits.students_per_session`, and a ``browser`` (an id its page keeps) that joins the session again
        gets its student back (same role, items and votes; a new token, the old one stops working): one browser,
        one voter."""
        now = time.time() if now is None else now
        lim = self.limits
        name = check_pseudonym(pseudonym)
        code = normal_code(join_code)
        bucket = "join:" + _hash(str(client or "anonymous"))  # the address, hashed: the table holds no addresses
        if self._failures(bucket, now) >= lim.join_failures_per_client:  # this address's own guesses, nobody else's
            raise ClassError(
                "Too many wrong codes were tried from this network address.",
                hint="Wait a few minutes, then type the code on the projector.",
            )
        token = secrets.token_urlsafe(24)
        sid = row = None
        if well_formed_code(code):  # anything else cannot be a code (and never reaches the database)
            with self._tx() as run:
                row = run(
                    "SELECT id, code_expires, status, per_student, shares, routing FROM sessions WHERE join_code = ?",
                    (code,),
                ).fetchone()
                if row is not None and row[1] >= now:
                    sid, _, status, per_student, shares, routing = row
        if sid is None:
            with self._tx() as run:
                self._hit(run, bucket, lim.join_failures_per_client, lim.join_window, now)
            if row is not None:
                raise ClassError("This join code has expired.", hint="Ask the lecturer for a new session.")
            raise ClassError("No class session has this code.", hint="Check the code shown on the projector.")
        if status != "open":
            raise ClassError("This class session is closed: no one can join now.")
        shares = json.loads(shares)
        stid = secrets.token_hex(12)
        client_hash = None if client is None else _hash(f"{sid}:{client}")
        browser_hash = None if not browser else _hash(f"{sid}:{browser}")
        with self._tx() as run:
            if self.postgres:  # joins to one session one at a time (SQLite's BEGIN IMMEDIATE already is)
                run("SELECT id FROM sessions WHERE id = ? FOR UPDATE", (sid,))
            if browser_hash is not None:
                again = run(
                    "SELECT id, pseudonym, role, assigned FROM students WHERE session_id = ? AND browser = ?",
                    (sid, browser_hash),
                ).fetchone()
                if again is not None:  # this browser joined before: the same student, a new token
                    run("UPDATE students SET token_hash = ? WHERE id = ?", (_hash(token), again[0]))
                    return Student(again[0], sid, again[1], again[2], tuple(json.loads(again[3]))), token
            n_students = int(run("SELECT COUNT(*) FROM students WHERE session_id = ?", (sid,)).fetchone()[0])
            if n_students >= lim.students_per_session:
                raise ClassError(
                    f"This class is full: it has {lim.students_per_session} students, the most a session holds."
                )
            if client_hash is not None:
                n_here = run(
                    "SELECT COUNT(*) FROM students WHERE session_id = ? AND client = ?", (sid, client_hash)
                ).fetchone()[0]
                if int(n_here) >= lim.joins_per_client:
                    raise ClassError(
                        f"{lim.joins_per_client} students have already joined this class from this network address, "
                        "the most one address may add.",
                        hint="Use the student you joined as (reload its page), or ask the lecturer.",
                    )
            taken = {r[0].casefold() for r in run("SELECT pseudonym FROM students WHERE session_id = ?", (sid,))}
            name = _free_name(name, taken)
            order = [r[0] for r in run("SELECT item_id FROM items WHERE session_id = ? ORDER BY position", (sid,))]
            roles = run("SELECT role, COUNT(*) FROM students WHERE session_id = ? GROUP BY role", (sid,)).fetchall()
            counts = {r: 0 for r in shares} | {r: int(n) for r, n in roles}
            seq = sum(counts.values())
            role = _deal(deal, counts, shares, self.rng) if deal is not None else "honest"
            if role not in ROLES:
                raise ValueError(f"unknown role {role!r}")
            # consecutive blocks of the item order: every item is labelled about equally often
            start = (seq * per_student) % len(order)
            mine = [order[(start + j) % len(order)] for j in range(per_student)]
            self.rng.shuffle(mine)
            if routing:  # dealt one at a time as the student asks (next_item)
                mine = []
            run(
                "INSERT INTO students (id, session_id, token_hash, pseudonym, role, seq, assigned, joined, rl_start, "
                "rl_count, client, browser) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (stid, sid, _hash(token), name, role, seq, json.dumps(mine), now, now, client_hash, browser_hash),
            )
        return Student(stid, sid, name, role, tuple(mine)), token

    @_retrying
    def student(self, token: str | None) -> Student:
        """The student whose token this is (a phone that reconnects resumes here), with the votes they gave."""
        if not token:
            raise ClassError("You have not joined a class session.", hint="Type the code on the projector.")
        rows = self._read(
            "SELECT s.id, s.session_id, s.pseudonym, s.role, s.assigned, x.expires FROM students s "
            "JOIN sessions x ON x.id = s.session_id WHERE s.token_hash = ?",
            (_hash(str(token)),),
        )
        if not rows or rows[0][5] < time.time():
            raise ClassError(
                "This student link is not valid (the session ended, or the link was changed).",
                hint="Join again with the code on the projector.",
            )
        r = rows[0]
        voted = dict(self._read("SELECT item_id, label FROM votes WHERE student_id = ?", (r[0],)))
        return Student(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), voted)

    @_retrying
    def rename(self, token: str, pseudonym: str) -> Student:
        """A new name for this student: unique in the session (ignoring case), else ClassError."""
        st = self.student(token)
        name = check_pseudonym(pseudonym)
        with self._tx() as run:
            if self.postgres:  # names in one session change one at a time (SQLite's BEGIN IMMEDIATE already does)
                run("SELECT id FROM sessions WHERE id = ? FOR UPDATE", (st.session_id,))
            others = run("SELECT pseudonym FROM students WHERE session_id = ? AND id <> ?", (st.session_id, st.id))
            if name.casefold() in {r[0].casefold() for r in others}:
                raise ClassError(f"Someone in this class is already called {name}.", hint="Choose another name.")
            run("UPDATE students SET pseudonym = ? WHERE id = ?", (name, st.id))
        return self.student(token)

    def vote(self, token: str | None, item_id: str, label: str, *, now: float | None = None) -> None:
        """Record (or replace) this student's answer to ``item_id``; ClassError when refused (nothing stored). When
        it returns, the vote is committed; while the database does not answer it raises :class:`ClassUnavailable`
        saying so (the vote was not counted)."""
        try:
            self._vote(token, item_id, label, now=now)
        except ClassUnavailable:
            raise ClassUnavailable(
                "The class server is not answering: your answer was not counted.", hint="Try again in a moment."
            ) from None

    @_retrying
    def _vote(self, token: str | None, item_id: str, label: str, *, now: float | None = None) -> None:
        now = time.time() if now is None else now
        st = self.student(token)
        item_id, label = str(item_id), str(label)
        if item_id not in st.assigned:
            raise ClassError("This item is not one of yours.", hint="Answer the item shown on your page.")
        with self._tx() as run:
            row = run("SELECT status, choices, expires FROM sessions WHERE id = ?", (st.session_id,)).fetchone()
            if row is None or row[2] < now:
                raise ClassError("This class session no longer exists (it was deleted or it expired).")
            if row[0] != "open":
                raise ClassError("Voting is closed: your answer was not counted.")
            if label not in json.loads(row[1]):
                raise ClassError("This answer is not one of the session's choices.")
            self._count_answer(run, st.id, now)
            run(
                "INSERT INTO votes (session_id, student_id, item_id, label, voted) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (student_id, item_id) DO UPDATE SET label = excluded.label, voted = excluded.voted",
                (st.session_id, st.id, item_id, label, now),
            )

    @_retrying
    def next_item(
        self, token: str | None, choose: Callable[[list[str], list[tuple], dict[str, int]], str]
    ) -> str | None:
        """The item this student answers next, or None when they have answered all theirs (or voting is closed).

        Without routing: the first of the items dealt at join that has no vote yet. With routing: that item if one
        was handed out and not answered yet (a reload shows the same item); else, while the student has had fewer
        than ``per_student``, ``choose(candidates, votes, handed)`` picks one among the items this student has not
        had (``votes``: the session's (student id, item id, label) rows; ``handed``: item id -> how many students
        were handed it), and it is added to the student's items. The choice runs outside the write transaction;
        if the student's items changed meanwhile (a second tab), the one handed there is returned instead."""
        st = self.student(token)
        todo = [i for i in st.assigned if i not in st.voted]
        if todo:
            return todo[0]
        session = self.session(st.session_id)
        if not session.routing or session.status != "open" or len(st.assigned) >= session.per_student:
            return None
        rows = self._read("SELECT item_id FROM items WHERE session_id = ? ORDER BY position", (st.session_id,))
        candidates = [r[0] for r in rows if r[0] not in st.assigned]
        if not candidates:
            return None
        votes = self._read("SELECT student_id, item_id, label FROM votes WHERE session_id = ?", (st.session_id,))
        handed: dict[str, int] = {}
        for (assigned,) in self._read("SELECT assigned FROM students WHERE session_id = ?", (st.session_id,)):
            for i in json.loads(assigned):
                handed[i] = handed.get(i, 0) + 1
        pick = choose(candidates, [tuple(v) for v in votes], handed)
        if pick not in candidates:
            raise ValueError(f"the router chose {pick!r}, which is not one of the candidates")
        with self._tx() as run:
            if self.postgres:
                run("SELECT id FROM students WHERE id = ? FOR UPDATE", (st.id,))
            now_assigned = json.loads(run("SELECT assigned FROM students WHERE id = ?", (st.id,)).fetchone()[0])
            if now_assigned != list(st.assigned):  # another tab handed one meanwhile: show that one
                voted = set(st.voted)
                return next((i for i in now_assigned if i not in voted), None)
            run("UPDATE students SET assigned = ? WHERE id = ?", (json.dumps([*now_assigned, pick]), st.id))
        return pick

    @_retrying
    def reveal_for(self, token: str) -> dict | None:
        """This student's part of the reveal (their estimate, role, the class's accuracies), or None before it."""
        st = self.student(token)
        session = self.session(st.session_id)
        rev = session.reveal
        if not rev:
            return None
        return {"role": st.role, "me": rev.get("students", {}).get(st.id), "class": rev.get("class", {}),
                "choices": list(session.choices)}  # fmt: skip

    # ---------------------------------------------------------------- the lecturer removes a student
    @_retrying
    def remove_student(self, session_id: str, key: str, student_id: str) -> None:
        """Delete one student of the session, with their votes and predictions (their page then asks them to join
        again; their browser may, as a new student). ClassError when the session has no such student."""
        self.check_key(session_id, key)
        with self._tx() as run:
            row = run("SELECT id FROM students WHERE id = ? AND session_id = ?", (str(student_id), session_id))
            if row.fetchone() is None:
                raise ClassError("This student is not in the session (already removed?).")
            run("DELETE FROM predictions WHERE student_id = ?", (str(student_id),))
            run("DELETE FROM votes WHERE student_id = ?", (str(student_id),))
            run("DELETE FROM students WHERE id = ?", (str(student_id),))

    # ---------------------------------------------------------------- predict, then reveal
    @_retrying
    def ask(
        self,
        session_id: str,
        key: str,
        kind: str,
        prompt: str,
        options: Sequence[str],
        answer: str,
        *,
        now: float | None = None,
    ) -> str:
        """Push a question to every phone (the one open question: an earlier open one is closed); returns its id.
        ``answer`` (one of ``options``, computed from the run) is kept from the students until :meth:`reveal_question`.
        The same checks as a session's items: a prompt of at most MAX_PROMPT characters, 2 to MAX_CHOICES options of
        at most MAX_ANSWER characters, no NUL; at most MAX_QUESTIONS a session."""
        now = time.time() if now is None else now
        self.check_key(session_id, key)
        _storable([prompt, kind, answer, *options])  # a NUL is refused, as in votes (not quietly made a space)
        prompt, kind = _printable(prompt), _printable(kind)[:40]
        options = [_printable(o) for o in options]
        if not prompt or len(prompt) > MAX_PROMPT:
            raise ClassError(f"A question needs a prompt of 1 to {MAX_PROMPT} characters.")
        if not 2 <= len(options) <= MAX_CHOICES or len(set(options)) != len(options):
            raise ClassError(f"A question needs 2 to {MAX_CHOICES} different answers.")
        if any(not o or len(o) > MAX_ANSWER for o in options):
            raise ClassError(f"Each answer to a question has 1 to {MAX_ANSWER} characters.")
        answer = _printable(answer)
        if answer not in options:
            raise ClassError("The question's right answer is not one of its answers.")
        qid = secrets.token_hex(8)
        with self._tx() as run:
            if self.postgres:
                run("SELECT id FROM sessions WHERE id = ? FOR UPDATE", (session_id,))
            n = int(run("SELECT COUNT(*) FROM questions WHERE session_id = ?", (session_id,)).fetchone()[0])
            if n >= MAX_QUESTIONS:
                raise ClassError(f"This session has asked {MAX_QUESTIONS} questions, the most one holds.")
            run("UPDATE questions SET status = 'closed' WHERE session_id = ? AND status = 'open'", (session_id,))
            run(
                "INSERT INTO questions (id, session_id, seq, kind, prompt, options, answer, status, asked) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?)",
                (qid, session_id, n, kind, prompt, json.dumps(options), answer, now),
            )
        return qid

    @_retrying
    def reveal_question(self, session_id: str, key: str, question_id: str) -> None:
        """Close the question to predictions and show its right answer (the step has run)."""
        self.check_key(session_id, key)
        with self._tx() as run:
            run(
                "UPDATE questions SET status = 'revealed' WHERE id = ? AND session_id = ?",
                (str(question_id), session_id),
            )

    @_retrying
    def withdraw_question(self, session_id: str, key: str) -> None:
        """No question on the phones any more (the lecturer moved on): every question of the session is closed."""
        self.check_key(session_id, key)
        with self._tx() as run:
            run("UPDATE questions SET status = 'closed' WHERE session_id = ? AND status <> 'closed'", (session_id,))

    def _question_row(self, session_id: str) -> tuple | None:
        rows = self._read(
            "SELECT id, kind, prompt, options, answer, status FROM questions WHERE session_id = ? AND "
            "status <> 'closed' ORDER BY seq DESC LIMIT 1",
            (session_id,),
        )
        return rows[0] if rows else None

    @_retrying
    def question_for(self, token: str | None) -> dict | None:
        """The question this student's phone shows: the open one (answer hidden) or the last revealed one, with the
        student's own prediction; None when the lecturer has asked none (or withdrawn it)."""
        st = self.student(token)
        row = self._question_row(st.session_id)
        if row is None:
            return None
        mine = self._read("SELECT choice FROM predictions WHERE question_id = ? AND student_id = ?", (row[0], st.id))
        out = {"id": row[0], "kind": row[1], "prompt": row[2], "options": json.loads(row[3]), "status": row[5],
               "mine": mine[0][0] if mine else None}  # fmt: skip
        if row[5] == "revealed":
            out["answer"] = row[4]
        return out

    @_retrying
    def question(self, session_id: str, key: str) -> dict | None:
        """The lecturer's view of the current question: prompt, answers, right answer, status, the class's
        predictions per answer and how many students have predicted (None when none is asked)."""
        self.check_key(session_id, key)
        row = self._question_row(session_id)
        if row is None:
            return None
        per = dict(self._read("SELECT choice, COUNT(*) FROM predictions WHERE question_id = ? GROUP BY choice",
                              (row[0],)))  # fmt: skip
        options = json.loads(row[3])
        n = int(self._read("SELECT COUNT(*) FROM students WHERE session_id = ?", (session_id,))[0][0])
        return {"id": row[0], "kind": row[1], "prompt": row[2], "options": options, "answer": row[4],
                "status": row[5], "counts": {o: int(per.get(o, 0)) for o in options},
                "predicted": sum(int(v) for v in per.values()), "students": n}  # fmt: skip

    def predict(self, token: str | None, question_id: str, choice: str, *, now: float | None = None) -> None:
        """Record (or replace) this student's prediction for the open question; ClassError when refused (the
        question is no longer open, the answer is not one of its answers, too many taps too fast)."""
        try:
            self._predict(token, question_id, choice, now=now)
        except ClassUnavailable:
            raise ClassUnavailable(
                "The class server is not answering: your prediction was not counted.", hint="Try again in a moment."
            ) from None

    @_retrying
    def _predict(self, token: str | None, question_id: str, choice: str, *, now: float | None = None) -> None:
        now = time.time() if now is None else now
        st = self.student(token)
        question_id, choice = str(question_id), str(choice)
        with self._tx() as run:
            row = run(
                "SELECT status, options FROM questions WHERE id = ? AND session_id = ?", (question_id, st.session_id)
            ).fetchone()
            if row is None:
                raise ClassError("This question is not part of your class session.")
            if row[0] != "open":
                raise ClassError("This question is closed: the step has run. Look at the projector.")
            if choice not in json.loads(row[1]):
                raise ClassError("This answer is not one of the question's answers.")
            self._count_answer(run, st.id, now)
            run(
                "INSERT INTO predictions (session_id, question_id, student_id, choice, predicted) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (student_id, question_id) DO UPDATE SET "
                "choice = excluded.choice, predicted = excluded.predicted",
                (st.session_id, question_id, st.id, choice, now),
            )


_STORES: dict[str, ClassStore] = {}
_STORES_LOCK = threading.Lock()


def get_store(url: str | None = None) -> ClassStore:
    """The process-wide store for ``url`` (default :func:`default_url`), opened (and migrated) once; expired
    sessions are deleted every :data:`PURGE_EVERY` seconds by a background thread, whether or not anyone uses the
    app (and no read returns an expired session meanwhile)."""
    url = url or default_url()
    with _STORES_LOCK:
        if url not in _STORES:
            _STORES[url] = ClassStore(url)
            threading.Thread(target=_purge_loop, args=(_STORES[url],), daemon=True, name="crowdlab-purge").start()
        store = _STORES[url]
    if time.time() - store.purged > PURGE_EVERY:  # expired sessions go while the app runs, not only at its start
        with contextlib.suppress(ClassUnavailable):  # the database is down: the caller's own call will say so
            store.purge_expired()
    return store


def _purge_loop(store: ClassStore) -> None:
    """Delete expired sessions every :data:`PURGE_EVERY` seconds while the process lives (a daemon thread)."""
    while True:
        time.sleep(PURGE_EVERY)
        try:
            if time.time() - store.purged >= PURGE_EVERY:
                store.purge_expired()
        except Exception as exc:  # the database is down for a while, or the store was closed: try again later
            log.warning("purging expired class sessions failed: %s", exc)
