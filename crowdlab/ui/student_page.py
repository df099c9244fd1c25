"""The student's page of a live class, built for a phone (375 px wide): no sidebar, no Plotly, large buttons.

Enter the code from the projector (or open the QR code's link, which carries it), keep or change the two-word name,
read the role card, answer the items one at a time, and after the lecturer's Reveal see what EM estimated about you.
Nothing about other students is shown. The server-issued token lives in this browser session and in the page's
address (``?t=``), so a phone that drops and reloads resumes where it was. Every refusal of the store
(:class:`crowdlab.classroom.store.ClassError`) is shown as its message; every name and prompt is escaped
(:func:`crowdlab.io.safe.md`).
"""

from __future__ import annotations

import re
import secrets

import streamlit as st

from crowdlab.classroom import items as ci
from crowdlab.classroom.store import ClassError, ClassUnavailable, get_store
from crowdlab.io import safe

TOKEN = "student.token"
ERROR = "student.error"
CODE = "student.code"
NAME = "student.name"
RENAME = "student.rename"
BROWSER = "student.browser"  # this browser's id (also in the cookie BROWSER_COOKIE): one browser, one student
BROWSER_COOKIE = "crowdlab_browser"
IMAGE_PX = 210  # the item's picture: small enough that the answers show below it on a 375 x 667 phone

# large tap targets, no sidebar, no toolbar clutter: a 375 x 667 phone shows an item and both answers at once;
# no text under 16 px (widget labels and captions are 14 px in Streamlit)
STYLE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {display: none;}
.block-container {padding: 0.8rem 0.9rem 2rem 0.9rem; max-width: 520px;}
header[data-testid="stHeader"], [data-testid="stElementToolbar"] {display: none;}
div[data-testid="stButton"] button {min-height: 3.4rem; font-size: 1.25rem;}
div[data-testid="stImage"] img {max-width: 100%; height: auto;}
[data-testid="stWidgetLabel"] p, [data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
div[data-testid="stButton"] button p {font-size: max(16px, 1em);}
[data-testid="stMain"] :is(p, li, label, summary, input, span, div, small) {font-size: max(16px, 1em);}
</style>"""


def answer_style(choices) -> str:
    """Each answer button in its own colour, the projector's colour for it (``ci.choice_colors``): the "orange"
    button is orange, the "blue" one blue; black text on light colours, white on dark ones."""
    rules = []
    for j, color in enumerate(ci.choice_colors(list(choices)).values()):
        ink = "#000000" if color in ci.DARK_INK else "#ffffff"
        rules.append(
            f".st-key-student-answer-{j} button {{background-color: {color}; border-color: {color}; color: {ink};}}"
            f".st-key-student-answer-{j} button p {{color: {ink}; font-weight: 600;}}"
        )
    return "<style>" + "".join(rules) + "</style>"


def client_address() -> str:
    """Who tries a code, for the store's limit of wrong codes: the connection's network address (a reload or a new
    browser session does not get a fresh allowance); "local" where Streamlit does not know it."""
    try:
        ip = st.context.ip_address  # None on localhost (Streamlit maps 127.0.0.1 and ::1 to None)
    except Exception:  # no browser connection (bare mode)
        ip = None
    return ip if isinstance(ip, str) and ip else "local"


def _browser() -> str:
    """This browser's id: its cookie when the page was loaded with one, else a new one (written to the cookie by
    :func:`_keep_browser`), kept in this browser session. A browser that joins a session again is the same student."""
    if BROWSER not in st.session_state:
        try:
            have = str(st.context.cookies.get(BROWSER_COOKIE) or "")
        except Exception:  # no browser connection (bare mode)
            have = ""
        st.session_state[BROWSER] = have if re.fullmatch(r"[A-Za-z0-9_-]{16,64}", have) else secrets.token_urlsafe(18)
    return st.session_state[BROWSER]


def _keep_browser() -> None:
    """Write this browser's id into its cookie (a year; a script in the page, nothing shown)."""
    value = _browser()
    try:
        if st.context.cookies.get(BROWSER_COOKIE) == value:
            return
    except Exception:
        pass
    st.html(
        f"<script>document.cookie = '{BROWSER_COOKIE}={value}; path=/; max-age=31536000; samesite=strict';</script>",
        unsafe_allow_javascript=True,
        width="content",
    )


def _fail(exc: ClassError) -> None:
    st.session_state[ERROR] = str(exc)


def on_join() -> None:
    try:
        _, token = get_store().join(
            st.session_state.get(CODE, ""), st.session_state.get(NAME, ""), client=client_address(), deal=ci.deal_role,
            browser=_browser(),
        )  # fmt: skip
    except ClassError as exc:
        _fail(exc)
        return
    st.session_state[TOKEN] = token
    st.query_params.clear()
    st.query_params["t"] = token


def on_vote(token: str, item_id: str, label: str) -> None:
    try:
        get_store().vote(token, item_id, label)
    except ClassError as exc:
        _fail(exc)


def on_rename(token: str) -> None:
    try:
        get_store().rename(token, st.session_state.get(RENAME, ""))
    except ClassError as exc:
        _fail(exc)


def on_leave() -> None:
    st.session_state.pop(TOKEN, None)
    st.query_params.clear()


def _token() -> str | None:
    return st.session_state.get(TOKEN) or st.query_params.get("t")


def join_form() -> None:
    if CODE not in st.session_state:
        st.session_state[CODE] = st.query_params.get("code", "")
    if NAME not in st.session_state:
        st.session_state[NAME] = ci.pseudonym()
    st.text_input("Code on the projector", key=CODE, max_chars=12, placeholder="e.g. K7MQ2X")
    st.text_input("Your name in class (two words; change it if you like)", key=NAME, max_chars=32)
    st.button("Join", type="primary", width="stretch", on_click=on_join, key="student.join")
    st.caption("Nothing about you but this name is kept, and only until the lecturer deletes the session.")


def _next_item(token: str, session) -> str | None:
    """The store's next item for this student; with routing, the least certain item under the class's fit."""
    store = get_store()
    if not session.routing:
        return store.next_item(token, lambda *a: "")  # dealt at join: the chooser is never asked
    ids = [it.item_id for it in store.items(session.id)]

    def choose(candidates, votes, handed):
        return ci.route_next(candidates, votes, handed, ids, session.choices, key=session.id)

    return store.next_item(token, choose)


def _item_view(token: str, student, session) -> None:
    store = get_store()
    n = session.per_student if session.routing else len(student.assigned)
    done = sum(1 for i in student.assigned if i in student.voted)
    next_id = _next_item(token, session) if session.status == "open" else None
    if next_id is None:
        _finished(token, done, n, closed=done < n)
        return
    _progress(done, n)
    item = store.item(session.id, next_id)
    st.subheader(safe.md(item.prompt), anchor=False)
    if item.svg or item.image:
        try:
            st.image(item.svg or item.image, width=IMAGE_PX)
        except Exception:  # a picture stored before uploads were checked: the item is still answerable
            st.caption("This item's picture cannot be shown.")
    st.html(answer_style(session.choices))
    row = st.container(horizontal=True, gap="small")
    for k, choice in enumerate(session.choices):
        row.button(
            safe.md(choice),
            key=f"student.answer.{k}",
            type="primary",
            width="stretch",
            on_click=on_vote,
            args=(token, item.item_id, choice),
        )


def on_predict(token: str, question_id: str, choice: str) -> None:
    try:
        get_store().predict(token, question_id, choice)
    except ClassError as exc:
        _fail(exc)


def question_card(token: str) -> None:
    """The lecturer's question about EM's next step, when one is on the phones: predict with a tap (a new tap
    replaces it while the question is open); once the step has run, the right answer beside the prediction."""
    q = get_store().question_for(token)
    if q is None:
        return
    with st.container(border=True):
        st.markdown(f"**Predict:** {safe.md(q['prompt'])}")
        mine = q.get("mine")
        if q["status"] == "revealed":
            answer = q.get("answer")
            if mine is None:
                st.markdown(f"The answer: **{safe.md(answer)}** (you did not predict).")
            elif mine == answer:
                st.success(f"You predicted **{safe.md(mine)}**: right!")
            else:
                st.warning(f"You predicted **{safe.md(mine)}**; the answer was **{safe.md(answer)}**.")
            return
        if mine is not None:
            st.markdown(f"Your prediction: **{safe.md(mine)}**. Watch the projector (tap another to change it).")
        for k, option in enumerate(q["options"]):
            st.button(safe.md(option), key=f"student.predict.{k}", width="stretch", on_click=on_predict,
                      args=(token, q["id"], option), type="primary" if option == mine else "secondary")  # fmt: skip


def _progress(done: int, n: int) -> None:
    st.progress(done / n if n else 1.0, text=f"{done} of {n} answered")


def _finished(token: str, done: int, n: int, closed: bool = False) -> None:
    """The finished student's view: the progress, then the reveal once the lecturer has pressed Reveal; until then
    "All done" and a button that looks for it.

    No timer looks for the reveal by itself: with a polling fragment (``st.fragment(run_every=...)``) in this view,
    3-17 of 40 phones in a class (benchmarks/bench_class.py) never drew the run after their last answer (the server
    had stored the vote and drawn the view; the browser did not apply that run and stayed on the last item). The
    same load with this view drawn without a fragment finished on every phone (benchmarks/README.md)."""
    _progress(done, n)
    try:
        rev = get_store().reveal_for(token)
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        return
    if rev:
        _revealed(rev)
        return
    if closed:
        st.warning("Voting is closed.")
    st.success(
        "All done. When the lecturer asks the class a question, or has revealed the roles, press a button below."
    )
    st.button("Look for the lecturer's question", key="student.look", width="stretch")
    st.button("See what EM found out", key="student.check", type="primary", width="stretch")


def _revealed(rev: dict) -> None:
    """This student's part of the reveal, in plain words: role, Dawid-Skene's estimate of their accuracy (and how
    sure it is) beside their true accuracy, what 50% means, MACE's probability that they answered at random (and why
    an honest student gets one too), and the class's accuracies."""
    st.subheader("What EM found out about you")
    role = rev["role"]
    st.markdown(f"Your secret role was **{ci.ROLE_TITLES.get(role, safe.md(role))}**.")
    me = rev.get("me") or {}
    acc, true = me.get("accuracy"), me.get("true_accuracy")
    if acc is not None:
        right = f"; you were right **{true:.0%}**" if true is not None else ""
        st.markdown(f"EM (Dawid-Skene) thinks you were right **{acc:.0%}** of the time{right}.")
        st.markdown(
            f"It is 95% sure the truth is between **{me['lower']:.0%} and {me['upper']:.0%}**: it saw only "
            f"{safe.plural(me['n'], 'answer')} of yours."
        )
        st.markdown(
            f"**50% means a coin flip**: with {len(rev.get('choices') or ()) or 2} answers to choose from, tapping "
            "at random is right about half the time. Below 50% you were worse than a coin: EM then reads your "
            "answers the other way round."
            if len(rev.get("choices") or ()) in (0, 2)
            else "**Chance** is one answer in "
            f"{len(rev['choices'])}: tapping at random is right about {1 / len(rev['choices']):.0%} of the time."
        )
    elif true is not None:
        st.markdown(f"You were right **{true:.0%}** of the time.")
    spam = me.get("mace_spamming")
    if spam is not None:
        st.markdown(f"MACE gives you a **{spam:.0%}** chance of having answered at random.")
        if role == "honest":
            st.markdown(
                "Why not 0%, if you were honest? MACE cannot see how you answered, only how often you agreed with "
                "what it believes the truth is. A few answers of yours that differ from the class (hard items "
                "fool everyone now and then) look like random taps, and a handful of answers is too few to rule "
                "random tapping out."
            )
    cls = rev.get("class") or {}
    parts = [f"{label} **{cls[k]:.0%}**" for k, label in (("mv_accuracy", "majority vote"),
             ("ds_accuracy", "Dawid-Skene"), ("mace_accuracy", "MACE")) if cls.get(k) is not None]  # fmt: skip
    if parts:
        st.markdown("Items the class got right, by " + ", ".join(parts) + ".")


def store_opens() -> bool:
    """The class database opens (CROWDLAB_DATA_DIR / CROWDLAB_CLASS_DB usable), or the page says why and stops."""
    try:
        get_store()
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        return False
    return True


def student_page() -> None:
    """The whole student page (pages/12_Join.py calls only this)."""
    st.set_page_config(page_title="Join a class · crowdlab", page_icon=":material/front_hand:", layout="centered")
    st.html(STYLE)
    error = st.session_state.pop(ERROR, None)
    if error:
        st.error(safe.md(error))
    if not store_opens():
        return
    _keep_browser()
    token = _token()
    if not token:
        st.title("Join the class", anchor=False)
        join_form()
        return
    try:
        _joined(token)
    except ClassUnavailable as exc:  # the database is down or restarting: the token stays, a press tries again
        st.error(safe.md(str(exc)))
        st.button("Try again", type="primary", width="stretch", key="student.retry")


def _joined(token: str) -> None:
    """The page of a student who has joined: name, role card, the next item or the finished view."""
    store = get_store()
    try:
        student = store.student(token)
        session = store.session(student.session_id)
    except ClassUnavailable:
        raise
    except ClassError as exc:
        st.error(safe.md(str(exc)))
        st.button("Join again", on_click=on_leave, width="stretch", key="student.leave")
        return
    st.session_state[TOKEN] = token
    st.markdown(f"You are **{safe.md(student.pseudonym)}** in *{safe.md(session.title)}*.")
    if not session.reveal:
        icon = ":material/check_circle:" if student.role == "honest" else ":material/lock:"
        st.info(ci.ROLE_CARDS.get(student.role, ""), icon=icon)
    question_card(token)
    _item_view(token, student, session)
    with st.expander("Change your name"):
        st.text_input("New name", key=RENAME, max_chars=32)
        st.button("Save name", on_click=on_rename, args=(token,), key="student.save_name")
