"""The lecturer's Class page: start a live class session, show its code and QR code, watch the votes arrive on the
projector, step EM through the class's own votes, reveal what EM found out about each role, export and delete.

The session's id and lecturer key live in this browser session (``class.session``, ``class.key``); the key is shown
once when the session starts, and with it and the join code the lecturer resumes the session from another browser
or after the app restarts (the database holds everything: :mod:`crowdlab.classroom.store`). The projector view is a
fragment that reruns itself once a second (:data:`PROJECTOR_EVERY`), never the whole page. Names and prompts are
the students' and the lecturer's text: escaped (:mod:`crowdlab.io.safe`); the export goes through
:func:`crowdlab.io.safe.csv_frame`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from crowdlab.classroom import items as ci
from crowdlab.classroom.store import ClassError, get_store
from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.plots.classroom import routing_curves
from crowdlab.ui import state
from crowdlab.ui.student_page import store_opens

SID = "class.session"
KEY = "class.key"
KEY_NEW = "class.key_new"  # the key, until the lecturer has seen it once
ERROR = "class.error"
EM_NOTE = "class.em_note"
ITEMS = "class.items"  # (session id, its items, its answers): read once, the projector shows them every second
PROJECTOR_EVERY = 1.0  # seconds: the projector's counts refresh at most once a second
STUDENT_PAGE = "Join"  # pages/12_Join.py is served at /Join

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


def on_start() -> None:
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
            routing=bool(_w("routing")),
        )  # fmt: skip
    except DataError as exc:
        _fail(exc)
        return
    st.session_state[SID] = session.id
    st.session_state[KEY] = key
    st.session_state[KEY_NEW] = True


def on_resume() -> None:
    try:
        session = get_store().lecturer_session(
            st.session_state.get(W + "resume_code", ""), st.session_state.get(W + "resume_key", "")
        )
    except ClassError as exc:
        _fail(exc)
        return
    st.session_state[SID] = session.id
    st.session_state[KEY] = st.session_state.get(W + "resume_key", "")


def on_key_seen() -> None:
    st.session_state[KEY_NEW] = False


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
    for k in (SID, KEY, KEY_NEW, EM_NOTE, ITEMS, ROUTING):
        st.session_state.pop(k, None)


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
def setup_form() -> None:
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
    st.button("Start the class session", type="primary", on_click=on_start, key="class.start")
    with st.expander("Resume a session (after a restart, or from another browser)"):
        st.text_input("Join code", key=W + "resume_code", max_chars=12)
        st.text_input("Lecturer key", key=W + "resume_key", type="password")
        st.button("Resume", on_click=on_resume, key="class.resume")


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


def key_panel() -> None:
    if not st.session_state.get(KEY_NEW):
        return
    with st.container(border=True):
        st.markdown("**Lecturer key** (shown once; with the join code it resumes this session anywhere):")
        st.code(st.session_state[KEY], language=None)
        st.button("I have noted the key", on_click=on_key_seen, key="class.key_seen")


@st.fragment(run_every=PROJECTOR_EVERY)
def projector() -> None:
    """Votes arriving live: students joined and done, votes counted, and the votes per item (no truth shown)."""
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
    row.metric("Students done", f"{counts['done']:,}", width="content")
    row.metric("Votes counted", f"{counts['votes']:,}", width="content")
    row.metric("Voting", "open" if counts["status"] == "open" else "closed", width="content")
    table = pd.DataFrame(
        [
            {"item": it.item_id, "prompt": it.prompt}
            | {c: counts["by_item"].get(it.item_id, {}).get(c, 0) for c in choices}
            for it in items
        ]
    )
    config = {c: st.column_config.NumberColumn(c, width="small") for c in choices}
    height = min(420, 36 + 35 * len(items))
    st.dataframe(table, hide_index=True, column_config=config, key="class.counts", height=height)


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
    st.caption(
        "Each row: the mean over that role's students. Spammers answer at random, so MACE should give them a high "
        "probability of spamming; adversaries answer the opposite, so Dawid-Skene should rate them below chance "
        "(and still use their answers, flipped)."
    )


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
    with st.expander("Export or delete"):
        try:
            votes = get_store().votes(session.id, st.session_state[KEY])
        except ClassError as exc:
            st.error(safe.md(str(exc)))
            return
        frame = pd.DataFrame(votes, columns=["pseudonym", "role", "item_id", "prompt", "truth", "label", "voted"])
        st.download_button(
            "Download the session (CSV: labels with pseudonyms, items, truth, roles)",
            safe.csv_bytes(frame),  # the one CSV writer: formulas escaped, CR and LF quoted (issue 42 §6)
            file_name=f"class-{session.join_code}.csv",
            mime="text/csv",
            key="class.export",
        )
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
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        st.button("Start another session", on_click=on_leave, key="class.gone")
        return
    st.markdown(f"### {safe.md(session.title)}")
    key_panel()
    join_panel(session)
    projector()
    reveal_panel(session)
    controls(session)
    routing_panel(session)
