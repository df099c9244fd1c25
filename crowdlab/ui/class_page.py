"""The lecturer's Class page: start a live class session, show its code and QR code, watch the votes arrive on the
projector, step EM through the class's own votes, reveal what EM found out about each role, export and delete.

The session's id and lecturer key live in this browser session (``class.session``, ``class.key``) and in a cookie
of this browser (:data:`COOKIE`, set by a script in the page), so a reload of the Class page brings the lecturer
back. The key is never drawn as text (the page is on the projector): it is offered as a download, and with it and
the join code the lecturer resumes the session from another browser or after the app restarts (the database holds
everything: :mod:`crowdlab.classroom.store`). The projector view is a
fragment that reruns itself once a second (:data:`PROJECTOR_EVERY`), never the whole page. Names and prompts are
the students' and the lecturer's text: escaped (:mod:`crowdlab.io.safe`); the export goes through
:func:`crowdlab.io.safe.csv_frame`.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from crowdlab.classroom import items as ci
from crowdlab.classroom import predict as cpredict
from crowdlab.classroom.store import ClassError, ClassUnavailable, get_store
from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.plots.classroom import (
    choice_colors,
    prediction_bars,
    reveal_dots,
    routing_curves,
    step_picture,
    vote_bars,
)
from crowdlab.ui import state
from crowdlab.ui.live_chart import live_chart
from crowdlab.ui.student_page import client_address, store_opens

SID = "class.session"
KEY = "class.key"
KEY_NEW = "class.key_new"  # the key file is offered, until the lecturer has downloaded it or said so
COOKIE = "crowdlab_class"  # this browser's session id and key: "<session id>.<key>"
COOKIE_SET = "class.cookie_set"  # None, or what the next run writes into the cookie ("" deletes it)
COOKIE_TRIED = "class.cookie_tried"  # this browser session has looked at the cookie once (a Leave is not undone)
ERROR = "class.error"
EM_NOTE = "class.em_note"
ITEMS = "class.items"  # (session id, its items, its answers): read once, the projector shows them every second
PROJECTOR_EVERY = 1.0  # seconds: the projector's counts refresh at most once a second
STUDENT_PAGE = "Join"  # pages/12_Join.py is served at /Join

SECRET_ENV = "CROWDLAB_CLASS_SECRET"  # creating a class on an app that listens beyond this machine needs it
LOCAL_ADDRESSES = ("127.0.0.1", "localhost", "::1")
W = "class.w."  # widget keys of the setup form
KINDS = {"dots": "Dots: which colour has more dots?", "primes": "Numbers: is it prime?", "upload": "Upload items"}
LEVELS = {"easy": 0.2, "medium": 0.5, "hard": 0.8}
DEFAULTS = {"kind": "dots", "n_items": 12, "level": "medium", "per_student": 10, "spammer": 20, "adversary": 10,
            "lazy": 10, "hours": 24, "answers": "yes, no", "title": "Our class", "routing": False}  # fmt: skip


def _fail(exc: Exception) -> None:
    st.session_state[ERROR] = str(exc)


def _w(name: str):
    return st.session_state.get(W + name, DEFAULTS.get(name))


# ---------------------------------------------------------------------------- callbacks
def _items_and_choices() -> tuple[list, list[str]]:
    kind, n, level = _w("kind"), int(_w("n_items")), LEVELS[_w("level")]
    if kind == "dots":
        return ci.dot_items(n, level), list(ci.DOT_CHOICES)
    if kind == "primes":
        return ci.prime_items(n, level), list(ci.PRIME_CHOICES)
    answers = [a.strip() for a in str(_w("answers")).split(",") if a.strip()]
    csv = st.session_state.get(W + "csv")
    if csv is None:
        raise DataError("No item file was uploaded.", hint="Choose a CSV with columns item_id and prompt.")
    images = st.session_state.get(W + "zip")
    items = ci.read_item_set(csv, answers, None if images is None else images.getvalue(),
                             zip_name=getattr(images, "name", "images.zip"))  # fmt: skip
    return items, answers


def listens_beyond_this_machine() -> bool:
    """Whether the app accepts connections from other machines (``server.address`` unset or not a loopback one)."""
    return str(st.get_option("server.address") or "").strip().strip("[]") not in LOCAL_ADDRESSES


def secret_needed() -> bool:
    return listens_beyond_this_machine()


def _secret_ok() -> bool:
    """The setup form's class secret is the one set by whoever started the app (always, on this machine only)."""
    if not secret_needed():
        return True
    want = os.environ.get(SECRET_ENV, "")
    got = str(st.session_state.get(W + "secret") or "")
    return bool(want) and hmac.compare_digest(want.encode("utf-8"), got.encode("utf-8"))


def on_start() -> None:
    try:
        if secret_needed():  # wrong secrets are limited per address, as wrong join codes are
            store, client = get_store(), client_address()
            if store.wrong_tries("secret", client) >= store.limits.join_failures_per_client:
                raise ClassError(
                    "Too many wrong class secrets were tried from this network address.",
                    hint="Wait a few minutes, then try again.",
                )
            if not _secret_ok():
                store.add_wrong_try("secret", client)
                raise ClassError("The class secret is wrong.", hint=f"Type the {SECRET_ENV} the app was started with.")
    except ClassError as exc:
        _fail(exc)
        return
    try:
        items, choices = _items_and_choices()
        shares = {r: float(_w(r)) for r in ("spammer", "adversary", "lazy")}
        honest = 100.0 - sum(shares.values())
        if honest < 0:
            raise DataError("The secret roles add up to more than 100%.", hint="Lower the shares of the roles.")
        hours = float(_w("hours"))
        session, key = get_store().create_session(
            items, choices, title=str(_w("title")), per_student=int(_w("per_student")),
            shares={"honest": honest, **shares}, code_ttl=hours * 3600, session_ttl=hours * 3600,
            routing=bool(_w("routing")), client=client_address(),
        )  # fmt: skip
    except DataError as exc:
        _fail(exc)
        return
    _enter(session.id, key)
    st.session_state[KEY_NEW] = True


def on_resume() -> None:
    try:
        session = get_store().lecturer_session(
            st.session_state.get(W + "resume_code", ""), st.session_state.get(W + "resume_key", "")
        )
    except ClassError as exc:
        _fail(exc)
        return
    _enter(session.id, str(st.session_state.get(W + "resume_key", "")).strip())


def _enter(session_id: str, key: str) -> None:
    """The lecturer is in ``session_id``: kept in this browser session and, from the next run, in a cookie."""
    st.session_state[SID] = session_id
    st.session_state[KEY] = key
    st.session_state[COOKIE_SET] = f"{session_id}.{key}"


def on_key_seen() -> None:
    st.session_state[KEY_NEW] = False


def _cookie_script(value: str, max_age: int) -> str:
    """A script that writes this browser's lecturer cookie (``value`` "" with ``max_age`` 0 deletes it)."""
    safe_value = re.sub(r"[^A-Za-z0-9_.-]", "", value)  # hex id, "." and a url-safe key: nothing else is written
    return (
        f"<script>document.cookie = {json.dumps(f'{COOKIE}={safe_value}')} + "
        f"'; path=/; max-age={int(max_age)}; samesite=strict';</script>"
    )


def _write_cookie() -> None:
    """Emit the pending cookie write, once (the script runs in the lecturer's browser, never shown as text)."""
    value = st.session_state.pop(COOKIE_SET, None)
    if value is None:
        return
    st.html(_cookie_script(value, 72 * 3600 if value else 0), unsafe_allow_javascript=True, width="content")


def _cookies() -> dict:
    """This browser's cookies as they were when its page was loaded (Streamlit reads them at connection)."""
    try:
        return dict(st.context.cookies)
    except Exception:  # no browser connection (bare mode)
        return {}


def resume_from_cookie() -> None:
    """After a reload: the session in this browser's cookie, when its key still opens it (once a browser session,
    so a Leave is not undone by the cookie the page was loaded with)."""
    if st.session_state.get(SID) or st.session_state.get(COOKIE_TRIED):
        return
    st.session_state[COOKIE_TRIED] = True
    sid, _, key = str(_cookies().get(COOKIE, "")).partition(".")
    if not sid or not key:
        return
    try:
        get_store().check_key(sid, key)
    except ClassError:  # deleted, expired, or another key: forget it
        st.session_state[COOKIE_SET] = ""
        return
    st.session_state[SID] = sid
    st.session_state[KEY] = key


def on_status(status: str) -> None:
    try:
        get_store().set_status(st.session_state[SID], st.session_state[KEY], status)
    except ClassError as exc:
        _fail(exc)


def _class_data():
    store = get_store()
    sid, key = st.session_state[SID], st.session_state[KEY]
    session = store.session(sid)
    votes = store.votes(sid, key)
    return session, votes, store.items(sid)


def on_step_em() -> None:
    """The class's votes become the working dataset of every page (gold: the items' truth)."""
    try:
        session, votes, items = _class_data()
        data, _ = ci.class_annotations(votes, items, session.choices, name=f"{session.title} (live class)")
    except DataError as exc:
        _fail(exc)
        return
    state.set_dataset(f"class:{session.id}:{len(votes)}", data, source=None)
    st.session_state[EM_NOTE] = (
        f"The class's {len(votes):,} votes are now the working dataset: open Step through EM (the roles stay secret)."
    )


def on_reveal() -> None:
    try:
        session, votes, items = _class_data()
        result = ci.reveal(votes, items, session.choices)
        get_store().set_reveal(session.id, st.session_state[KEY], result)
    except DataError as exc:
        _fail(exc)


def on_hide_reveal() -> None:
    try:
        get_store().set_reveal(st.session_state[SID], st.session_state[KEY], None)
    except ClassError as exc:
        _fail(exc)


def on_leave() -> None:
    for k in (SID, KEY, KEY_NEW, EM_NOTE, ITEMS, ROUTING, RUN, AT, ASKED):
        st.session_state.pop(k, None)
    st.session_state[COOKIE_TRIED] = True
    st.session_state[COOKIE_SET] = ""  # this browser no longer comes back to it by itself


def on_delete() -> None:
    try:
        get_store().delete_session(st.session_state[SID], st.session_state[KEY])
    except ClassError as exc:
        _fail(exc)
        return
    on_leave()
    st.session_state[ERROR] = None
    st.session_state[EM_NOTE] = "The session and all its votes were deleted."


# ---------------------------------------------------------------------------- views
def resume_form() -> None:
    with st.expander("Resume a session (after a restart, or from another browser)"):
        st.text_input("Join code", key=W + "resume_code", max_chars=12)
        st.text_input("Lecturer key", key=W + "resume_key", type="password")
        st.button("Resume", on_click=on_resume, key="class.resume")


def setup_form() -> None:
    if secret_needed() and not os.environ.get(SECRET_ENV):
        st.warning(
            "This app listens on the network, so anyone who can reach it could start a class here. Starting one "
            f"needs a class secret: start the app with the environment variable {SECRET_ENV} set to a secret of "
            "your choice (students need none). A running session can still be resumed with its key."
        )
        resume_form()
        return
    for name, value in DEFAULTS.items():
        st.session_state.setdefault(W + name, value)
    st.markdown(
        "Students join from their phones with a code, label a few items each (some secretly told to answer "
        "carelessly), and EM finds out who was careless."
    )
    st.text_input("Title (shown to students)", key=W + "title", max_chars=80)
    st.radio("Items", list(KINDS), format_func=KINDS.get, key=W + "kind", horizontal=True)
    if _w("kind") == "upload":
        st.file_uploader("Items (CSV: item_id, prompt, optional truth and image)", type=["csv", "tsv", "txt"],
                         key=W + "csv")  # fmt: skip
        st.file_uploader("Images (optional zip of PNG, JPEG or GIF files the CSV names)", type=["zip"], key=W + "zip")
        st.text_input("Answers to choose from (comma-separated)", key=W + "answers")
    else:
        row = st.container(horizontal=True)
        row.number_input("Items", min_value=2, max_value=60, key=W + "n_items", width=140)
        row.segmented_control("Difficulty", list(LEVELS), key=W + "level", width="content")
    row = st.container(horizontal=True)
    row.number_input("Items per student", min_value=1, max_value=60, key=W + "per_student", width=160)
    row.number_input("Session lasts (hours)", min_value=1, max_value=72, key=W + "hours", width=180)
    st.markdown("**Secret roles** (% of students; the rest are honest)")
    row = st.container(horizontal=True)
    for role in ("spammer", "adversary", "lazy"):
        row.number_input(ci.ROLE_TITLES[role], min_value=0, max_value=100, step=5, key=W + role, width=130)
    st.caption(" · ".join(f"**{ci.ROLE_TITLES[r]}**: {ci.ROLE_CARDS[r]}" for r in ci.ROLE_CARDS))
    st.toggle(
        "Route each student's next item to the least certain one",
        key=W + "routing",
        help=f"Uncertainty sampling: every item first gets {ci.ROUTE_FLOOR} labels, then each student's next item is "
        "the one whose label the class's current fit (vote shares, then Dawid-Skene) is least sure of. Off: each "
        "student gets a fixed block of items, so every item is labelled about equally often.",
    )
    if secret_needed():
        st.text_input(f"Class secret ({SECRET_ENV}, set by whoever started the app)", key=W + "secret",
                      type="password")  # fmt: skip
    st.button("Start the class session", type="primary", on_click=on_start, key="class.start")
    resume_form()


def _student_url(session) -> str:
    base = st.session_state.get(W + "base_url") or (st.context.url or "http://localhost:8501/")
    base = base.split("?")[0].rstrip("/")
    if base.rsplit("/", 1)[-1] in ("Class", STUDENT_PAGE):
        base = base.rsplit("/", 1)[0]
    return f"{base}/{STUDENT_PAGE}?code={session.join_code}"


def join_panel(session) -> None:
    url = _student_url(session)
    left, right = st.columns([3, 2])
    with left:
        st.markdown(f"## Join code: `{session.join_code}`")
        st.markdown(f"Open **{safe.md(url.split('?')[0])}** on your phone and type the code, or scan the QR code.")
        if any(h in url for h in ("localhost", "127.0.0.1")):
            st.warning(
                "Phones cannot reach localhost: start crowdlab with `--server.address 0.0.0.0` and open it by the "
                "machine's network address (see the README), or type that address below."
            )
        st.text_input("Address students open (if the one above is wrong)", key=W + "base_url",
                      placeholder="http://192.168.1.20:8501")  # fmt: skip
    with right:
        try:
            import segno

            st.image(segno.make(url, error="m").svg_inline(scale=6, dark="#000000", light="#ffffff"), width=260)
        except ImportError:
            st.caption("Install segno for a QR code (pip install segno).")


def key_file(session) -> str:
    """The text of the lecturer-key download (the key is never drawn on the page: it is on the projector)."""
    return (
        f"crowdlab class session: {session.title}\njoin code: {session.join_code}\n"
        f"lecturer key: {st.session_state[KEY]}\n\nWith the join code and this key, Resume a session on the Class page "
        "resumes it from any browser (keep the key to yourself: it reveals, exports and deletes the session).\n"
    )


def key_panel(session) -> None:
    """The lecturer key, as a file to download: never as text on the projected page."""
    if not st.session_state.get(KEY_NEW):
        return
    with st.container(border=True):
        st.markdown(
            "**Lecturer key**: this browser keeps it (a reload brings you back here). To resume from another "
            "browser, download it now; it is not shown on this page, which the room can see."
        )
        row = st.container(horizontal=True)
        row.download_button(
            "Download the lecturer key", key_file(session), file_name=f"class-{session.join_code}-key.txt",
            mime="text/plain", on_click=on_key_seen, key="class.key_download",
        )  # fmt: skip
        row.button("I have the key", on_click=on_key_seen, key="class.key_seen")


PICTURES_PER_ROW = 6
PICTURE_PX = 140


def _picture(where, item) -> None:
    """One item as the phones see it: its dots, its picture, or (a number, an uploaded prompt) its text, large."""
    with where:
        shown = False
        if item.svg or item.image:
            try:
                st.image(item.svg or item.image, width=PICTURE_PX)
                shown = True
            except Exception:  # a picture stored before uploads were checked: its text instead
                pass
        if not shown:
            number = re.search(r"\b(\d+)\b", item.prompt) if item.item_id.startswith("number-") else None
            st.markdown(f"## {number.group(1)}" if number else f"**{safe.md(item.prompt)}**")
        st.caption(safe.md(item.item_id))


def pictures(session) -> None:
    """The items as pictures (drawn once a page run, not every second: they never change), the prompt once."""
    try:
        items = get_store().items(session.id)
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        return
    prompts = {it.prompt for it in items}
    if len(prompts) == 1:
        st.markdown(f"#### {safe.md(items[0].prompt)}")
    for start in range(0, len(items), PICTURES_PER_ROW):
        cols = st.columns(PICTURES_PER_ROW)
        for col, item in zip(cols, items[start : start + PICTURES_PER_ROW], strict=False):
            _picture(col, item)


@st.fragment(run_every=PROJECTOR_EVERY)
def projector() -> None:
    """Votes arriving live: students joined, still answering and done, votes counted and the pace, and the class's
    answers per item as stacked bars in the answers' colours (a live chart: each second's counts glide in)."""
    store = get_store()
    sid, key = st.session_state.get(SID), st.session_state.get(KEY)
    if not sid:
        return
    try:
        counts = store.counts(sid, key)
        if st.session_state.get(ITEMS, (None,))[0] != sid:  # items never change: read once per session
            session = store.session(sid)
            st.session_state[ITEMS] = (sid, store.items(sid), session.choices)
        _, items, choices = st.session_state[ITEMS]
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        return
    row = st.container(horizontal=True)
    row.metric("Students joined", f"{counts['students']:,}", width="content")
    row.metric("Still answering", f"{counts.get('answering', 0):,}", width="content")
    row.metric("Students done", f"{counts['done']:,}", width="content")
    row.metric("Votes counted", f"{counts['votes']:,}", width="content")
    row.metric("Pace (votes a minute)", f"{counts.get('per_minute', 0):.0f}", width="content")
    row.metric("Voting", "open" if counts["status"] == "open" else "closed", width="content")
    live_chart(vote_bars([it.item_id for it in items], choices, counts["by_item"]), key="class.bars")


def _pct(x) -> str:
    return "–" if x is None else f"{x:.0%}"


def reveal_panel(session) -> None:
    rev = session.reveal
    if not rev:
        return
    st.subheader("Reveal: did EM find the careless students?")
    st.caption("Students: press **See what EM found out** on your phone.")
    cls = rev.get("class", {})
    row = st.container(horizontal=True)
    for k, label in (("mv_accuracy", "Majority vote"), ("ds_accuracy", "Dawid-Skene"), ("mace_accuracy", "MACE")):
        row.metric(f"{label}: accuracy", _pct(cls.get(k)), width="content")
    for k in ("ds_error", "mace_error"):
        if cls.get(k):
            st.warning(safe.md(cls[k]))
    try:
        names = {s.id: s.pseudonym for s in get_store().students(session.id, st.session_state[KEY])}
    except ClassError:
        names = {}
    live_chart(reveal_dots(rev, names), key="class.reveal_chart")
    st.caption(
        "Each dot is a student, coloured by the secret role. Left: on the diagonal, EM estimated their accuracy "
        "right; the dashed line is a coin flip (50%). Spammers answer at random, so MACE should give them a high "
        "probability of answering at random (middle); adversaries answer the opposite, so Dawid-Skene rates them "
        "below chance (and still uses their answers, flipped). Right: majority vote's accuracy against EM's."
    )
    with st.expander("The numbers, per role"):
        roles = pd.DataFrame(
            [
                {
                    "role": ci.ROLE_TITLES.get(r, r),
                    "students": v["students"],
                    "right (truth)": v.get("true_accuracy"),
                    "Dawid-Skene: accuracy": v.get("accuracy"),
                    "MACE: accuracy": v.get("mace_accuracy"),
                    "MACE: P(spamming)": v.get("mace_spamming"),
                }
                for r, v in rev.get("roles", {}).items()
            ]
        )
        pct = {c: st.column_config.NumberColumn(c, format="percent") for c in roles.columns[2:]}
        st.dataframe(roles, hide_index=True, column_config=pct, key="class.roles")


# ---------------------------------------------------------------------------- step through EM here, predict first
RUN = "class.run"  # (session id, method, votes used, the Run, its Annotations)
AT = "class.at"  # the snapshot the projector shows
ASKED = "class.asked"  # the question on the phones: (question id, its Question) or None
KIND_LABELS = {"trust": "Who will EM trust most?", "flip": "Will an item change its label?",
               "objective": "Objective: up, stay or down?"}  # fmt: skip


def on_class_run(session_id: str) -> None:
    """EM (the chosen method) on the class's votes so far, run to convergence; the projector starts at its start."""
    try:
        session, votes, items = _class_data()
        method = str(_w("step_method") or "ds")
        run, data = cpredict.class_run(votes, items, session.choices, method)
    except (ClassError, DataError) as exc:
        _fail(exc)
        return
    except Exception as exc:  # a class too small or too odd to fit: a sentence, not a traceback
        _fail(DataError(f"EM could not run on these votes: {exc}"))
        return
    st.session_state[RUN] = (session_id, method, len(votes), run, data)
    st.session_state[AT] = 0
    on_withdraw()


def on_move(delta: int) -> None:
    got = st.session_state.get(RUN)
    if got:
        st.session_state[AT] = max(0, min(len(got[3].snapshots) - 1, int(st.session_state.get(AT, 0)) + delta))


def on_ask(kind: str) -> None:
    """Push the ``kind`` question about what follows the shown snapshot to every phone (its answer computed from
    the run)."""
    got = st.session_state.get(RUN)
    if not got:
        return
    q = cpredict.question(got[3], got[4], int(st.session_state.get(AT, 0)), kind)
    if q is None:
        _fail(ClassError("The run ends before that step: there is nothing left to predict."))
        return
    try:
        qid = get_store().ask(st.session_state[SID], st.session_state[KEY], q.kind, q.prompt, q.options, q.answer)
    except ClassError as exc:
        _fail(exc)
        return
    st.session_state[ASKED] = (qid, q)


def on_run_step() -> None:
    """Run the step the question is about (the projector animates it) and show the right answer on every phone."""
    asked = st.session_state.get(ASKED)
    if not asked:
        return
    try:
        get_store().reveal_question(st.session_state[SID], st.session_state[KEY], asked[0])
    except ClassError as exc:
        _fail(exc)
        return
    st.session_state[AT] = asked[1].target


def on_withdraw() -> None:
    if st.session_state.get(ASKED) is not None:
        try:
            get_store().withdraw_question(st.session_state[SID], st.session_state[KEY])
        except ClassError as exc:
            _fail(exc)
    st.session_state[ASKED] = None


def _step_figure(run, data, at: int, choices) -> object:
    snap = run.snapshots[at]
    q = run.snapshot(at).q
    kind = {"init": "the start", "E": "after an E-step", "M": "after an M-step"}.get(snap.kind, snap.kind)
    obj = "" if snap.objective is None else f", objective {snap.objective:.3f}"
    title = f"{cpredict.model_name(run)} on our votes: half-step {at} of {len(run.snapshots) - 1} ({kind}{obj})"
    return step_picture(
        [str(n) for n in data.worker_names], cpredict.trust(run, at), [str(i) for i in data.item_names],
        [float(p) for p in q[:, 0]], str(data.class_names[0]), title, colors=choice_colors(choices),
    )  # fmt: skip


def _outcome(q) -> str:
    """What happened, in words, beside the class's predictions."""
    d = q.detail
    if q.kind == "objective":
        return f"The objective went from {d['before']:.4f} to {d['after']:.4f}: **{q.answer}** ({d['step']}-step)."
    if q.kind == "flip":
        return (
            f"Item {safe.md(d['item'])} was {safe.md(d['before'])!r} ({d['p_before']:.0%} sure) and is now "
            f"{safe.md(d['after'])!r} ({d['p_after']:.0%} sure): **{safe.md(q.answer)}**."
        )
    best = ", ".join(f"{safe.md(n)} {v:.0%}" for n, v in sorted(d["after"].items(), key=lambda x: -x[1]))
    return f"After the M-step: {best}. Most trusted: **{safe.md(q.answer)}**."


@st.fragment(run_every=PROJECTOR_EVERY)
def predictions_live(
    asked_key: str = ASKED, chart_key: str = "class.predictions", height: int = 320, side: bool = False
) -> None:
    """The class's predictions for the question on the phones, counted live; after the step, the right answer.
    ``asked_key``: the session key of the question, (question id, its Question, ...): this page's step-through
    or a lesson's (:mod:`crowdlab.ui.lesson_class`), each with its own chart key and height. ``side``: the words
    beside the bars, not above and under them (a lesson's narrow picture column, under its own chart); once the step
    has run, the answer there takes the place of the question."""
    asked = st.session_state.get(asked_key)
    sid, key = st.session_state.get(SID), st.session_state.get(KEY)
    if not asked or not sid:
        return
    try:
        cur = get_store().question(sid, key)
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        return
    if cur is None or cur["id"] != asked[0]:
        return
    shown = cur["status"] == "revealed"
    if side:
        bars, words = st.columns([1, 1.1], vertical_alignment="center")
    else:
        bars = words = st.container()
    if not (side and shown):
        words.markdown(f"**On the phones:** {safe.md(cur['prompt'])}")
        words.caption(f"{cur['predicted']} of {cur['students']} students have predicted.")
    with bars:
        live_chart(prediction_bars(cur, shown, height), key=chart_key)
    if shown:
        right = cur["counts"].get(cur["answer"], 0)
        words.success(f"{_outcome(asked[1])} {right} of {cur['predicted']} predicted it.")


@st.fragment
def step_here(session) -> None:
    """Step through EM on the class's votes on this page (the projector), and before a step ask the phones what
    it will do: predict, then reveal."""
    error = st.session_state.pop(ERROR, None)  # a refusal from this panel's own buttons (a fragment rerun)
    if error:
        st.error(safe.md(error))
    st.session_state.setdefault(W + "step_method", "ds")
    with st.container(border=True):
        st.markdown("**Step through EM here, and let the class predict each step first**")
        row = st.container(horizontal=True, vertical_alignment="bottom")
        row.segmented_control("Model", list(cpredict.METHODS), format_func=cpredict.METHODS.get,
                              key=W + "step_method", width="content")  # fmt: skip
        row.button("Run EM on our votes", on_click=on_class_run, args=(session.id,), key="class.step_go")
        got = st.session_state.get(RUN)
        if not got or got[0] != session.id:
            st.caption("EM runs on the votes counted so far; step it half a step at a time, or ask the phones first.")
            return
        _, method, n_votes, run, data = got
        at = int(st.session_state.get(AT, 0))
        asked = st.session_state.get(ASKED)
        nav = st.container(horizontal=True)
        nav.button("Back", on_click=on_move, args=(-1,), key="class.step_back", disabled=at == 0 or bool(asked))
        nav.button("Next half-step", on_click=on_move, args=(1,), key="class.step_next",
                   disabled=at >= len(run.snapshots) - 1 or bool(asked))  # fmt: skip
        live_chart(_step_figure(run, data, at, session.choices), key="class.step_chart")
        st.caption(f"{cpredict.METHODS[method]} on {n_votes:,} votes; the roles stay secret.")
        if asked is None:
            kinds = [k for k in cpredict.KINDS if cpredict.question(run, data, at, k) is not None]
            if not kinds:
                st.caption("EM has converged: nothing left to predict.")
                return
            ask = st.container(horizontal=True)
            ask.markdown("**Ask the phones first:**")
            for k in kinds:
                ask.button(KIND_LABELS[k], on_click=on_ask, args=(k,), key=f"class.ask.{k}")
        else:
            q = asked[1]
            ctl = st.container(horizontal=True)
            if at != q.target:
                ctl.button("Run the step and show the answers", type="primary", on_click=on_run_step,
                           key="class.step_run")  # fmt: skip
            ctl.button("Done with this question", on_click=on_withdraw, key="class.step_done")


ROUTING = "class.routing"  # (session id, votes counted, the comparison, the live curve)


def on_routing(session_id: str) -> None:
    try:
        store = get_store()
        session, votes, items = _class_data()
        counts = store.counts(session_id, st.session_state[KEY])
        comparison = ci.routing_comparison(
            items, session.choices, students=max(10, min(60, counts["students"] or 30)),
            per_student=session.per_student, shares=session.shares,
        )  # fmt: skip
        live = ci.accuracy_over_labels(votes, items, session.choices) if votes else None
    except (ClassError, DataError) as exc:
        _fail(exc)
        return
    st.session_state[ROUTING] = (session_id, len(votes), comparison, live)


def routing_panel(session) -> None:
    """MV vs EM accuracy over labels spent: a simulated class like ours with and without routing (same items,
    roles, class size), and our own votes as markers."""
    with st.expander("What routing buys: majority vote and EM over labels spent"):
        mode = "on: each next item is the least certain one" if session.routing else "off: fixed blocks of items"
        st.caption(
            f"Routing is {mode}. The lines come from simulated classes like ours (same items, secret roles and "
            "class size; the mean of 3), with and without routing; the diamonds are our own votes so far."
        )
        st.button("Simulate and compare", on_click=on_routing, args=(session.id,), key="class.routing_go")
        got = st.session_state.get(ROUTING)
        if got and got[0] == session.id:
            st.plotly_chart(routing_curves(got[2], got[3]), key="class.routing_chart")
            end = {name: c["ds"][-1] for name, c in got[2].items() if c.get("ds")}
            if all(v is not None for v in end.values()) and len(end) == 2:
                st.caption(
                    f"After every label, EM is right on {end['routing']:.0%} of the items with routing and "
                    f"{end['fixed deal']:.0%} without (simulated; computed at {got[1]:,} votes of ours)."
                )


EXPORT_COLUMNS = ["student_id", "pseudonym", "role", "item_id", "prompt", "truth", "label", "voted"]


def export_frame(votes: list[dict]) -> pd.DataFrame:
    """The export: one row a vote, the student's id beside the name (names are unique per session, the id in
    every case), the time of the vote as ISO 8601 in UTC."""
    frame = pd.DataFrame(votes, columns=EXPORT_COLUMNS)
    frame["voted"] = [datetime.fromtimestamp(float(t), tz=UTC).isoformat(timespec="seconds") for t in frame["voted"]]
    return frame


def on_remove() -> None:
    try:
        get_store().remove_student(st.session_state[SID], st.session_state[KEY], str(_w("remove") or ""))
    except ClassError as exc:
        _fail(exc)
        return
    st.session_state.pop(W + "remove", None)


def remove_panel(session) -> None:
    """Remove a student (a joke name, someone who left): their votes and predictions go with them."""
    with st.expander("Remove a student"):
        try:
            students = {s.id: s.pseudonym for s in get_store().students(session.id, st.session_state[KEY])}
        except ClassError as exc:
            st.error(safe.md(str(exc)))
            return
        if not students:
            st.caption("Nobody has joined yet.")
            return
        if st.session_state.get(W + "remove") not in (None, *students):
            st.session_state.pop(W + "remove", None)
        st.selectbox("Student", list(students), format_func=lambda i: students.get(i, i), key=W + "remove",
                     index=None, placeholder="Choose a name")  # fmt: skip
        st.button("Remove this student and their votes", on_click=on_remove, disabled=not _w("remove"),
                  key="class.remove")  # fmt: skip


def controls(session) -> None:
    st.subheader("Lecturer controls")
    row = st.container(horizontal=True)
    if session.status == "open":
        row.button("Close voting", on_click=on_status, args=("closed",), key="class.close")
    else:
        row.button("Reopen voting", on_click=on_status, args=("open",), key="class.reopen")
    row.button("Step through EM on our votes", type="primary", on_click=on_step_em, key="class.em")
    if session.reveal:
        row.button("Hide the reveal", on_click=on_hide_reveal, key="class.unreveal")
    else:
        row.button("Reveal the roles", on_click=on_reveal, key="class.reveal")
    note = st.session_state.get(EM_NOTE)
    if note:
        st.success(note)
        try:
            st.page_link("pages/2_Step_through_EM.py", label="Step through EM", icon=":material/stairs:")
        except Exception:  # started from the page file alone (tests): no multipage app to link into
            pass
    remove_panel(session)
    with st.expander("Export or delete"):
        try:
            votes = get_store().votes(session.id, st.session_state[KEY])
        except ClassError as exc:
            st.error(safe.md(str(exc)))
            return
        frame = export_frame(votes)
        st.download_button(
            "Download the session (CSV: labels with pseudonyms, items, truth, roles)",
            safe.csv_bytes(frame),  # the one CSV writer: formulas escaped, CR and LF quoted (issue 42 §6)
            file_name=f"class-{session.join_code}.csv",
            mime="text/csv",
            key="class.export",
        )
        st.download_button(
            "Download the lecturer key (to resume from another browser)", key_file(session),
            file_name=f"class-{session.join_code}-key.txt", mime="text/plain", key="class.key_again",
        )  # fmt: skip
        st.caption("The session is deleted by itself when it expires; delete it now to remove every name and vote.")
        st.checkbox("Yes, delete this session and all its votes", key=W + "confirm_delete")
        st.button("Delete the session", on_click=on_delete, disabled=not _w("confirm_delete"), key="class.delete")
        st.button("Leave this session (it keeps running)", on_click=on_leave, key="class.leave")


def class_page() -> None:
    """The whole lecturer page below the frame (pages/11_Class.py calls this after page_frame)."""
    error = st.session_state.pop(ERROR, None)
    if error:
        st.error(safe.md(error))
    if not store_opens():
        return
    resume_from_cookie()
    _write_cookie()
    sid = st.session_state.get(SID)
    if not sid:
        note = st.session_state.pop(EM_NOTE, None)
        if note:
            st.info(note)
        setup_form()
        return
    try:
        session = get_store().session(sid)
        get_store().check_key(sid, st.session_state.get(KEY))
    except ClassUnavailable as exc:  # the database is down or restarting: stay in the session
        st.error(safe.md(str(exc)))
        st.button("Try again", key="class.retry")
        return
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        st.button("Start another session", on_click=on_leave, key="class.gone")
        return
    try:
        st.markdown(f"### {safe.md(session.title)}")
        key_panel(session)
        join_panel(session)
        pictures(session)
        projector()
        step_here(session)
        predictions_live()
        reveal_panel(session)
        controls(session)
        routing_panel(session)
    except ClassUnavailable as exc:
        st.error(safe.md(str(exc)))
