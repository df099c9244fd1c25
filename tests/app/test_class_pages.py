"""The Class (lecturer) and Join (student) pages under AppTest: a session from start to reveal, EM on the class's
votes, and the refusals a room full of students meets (each shown as a message, nothing stored)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.classroom import store as cs
from crowdlab.classroom.store import get_store
from crowdlab.io import safe
from crowdlab.ui import class_page as cp
from crowdlab.ui import state
from crowdlab.ui import student_page as sp
from tests.app.helpers import click, goto, ok

ROOT = Path(__file__).resolve().parents[2]
CLASS = str(ROOT / "pages" / "11_Class.py")
JOIN = str(ROOT / "pages" / "12_Join.py")
HOME = str(ROOT / "app.py")


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("CROWDLAB_CLASS_DB", raising=False)
    monkeypatch.setenv("CROWDLAB_DATA_DIR", str(tmp_path))
    return tmp_path


def _lecturer(**settings) -> AppTest:
    at = goto(ok(AppTest.from_file(HOME, default_timeout=30).run()), "pages/11_Class.py")
    for name, value in settings.items():
        at.session_state[cp.W + name] = value
    return click(at, "class.start")


def _student(code: str | None = None, name: str | None = None) -> AppTest:
    at = AppTest.from_file(JOIN, default_timeout=30)
    if code is not None:
        at.query_params["code"] = code
    ok(at.run())
    if name is not None:
        at.text_input(key=sp.NAME).set_value(name)
    return at


def _session(at: AppTest):
    return get_store().session(at.session_state[cp.SID])


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def _page_text(at: AppTest) -> str:
    """Everything the page draws as text (markdown, code, metrics, captions, alerts, labels, tables)."""
    parts = [str(e.value) for kind in ("markdown", "code", "caption", "error", "warning", "info", "success")
             for e in at.get(kind)]  # fmt: skip
    parts += [str(m.label) + str(m.value) for m in at.metric]
    parts += [str(w.proto.label) for w in [*at.button, *at.text_input, *at.get("download_button")]]
    parts += [d.value.to_csv() for d in at.dataframe]
    return "\n".join(parts)


def test_the_lecturer_key_is_a_download_and_a_reload_brings_the_lecturer_back(monkeypatch):
    lec = _lecturer(n_items=4, per_student=3)
    sid, key = lec.session_state[cp.SID], lec.session_state[cp.KEY]
    session = _session(lec)
    assert key not in _page_text(lec)
    scripts = [h.proto.body for h in lec.get("html")]
    assert any("document.cookie" in b and f"{sid}.{key}" in b for b in scripts)  # kept in this browser
    # a reload: a new browser session whose only memory is the cookie
    monkeypatch.setattr(cp, "_cookies", lambda: {cp.COOKIE: f"{sid}.{key}"})
    again = goto(ok(AppTest.from_file(HOME, default_timeout=30).run()), "pages/11_Class.py")
    assert again.session_state[cp.SID] == sid and "class.start" not in {b.key for b in again.button}
    assert any(session.join_code in m.value for m in again.markdown) and key not in _page_text(again)
    click(again, "class.leave")  # Leave is not undone by the cookie the page was loaded with ...
    assert cp.SID not in again.session_state and "class.start" in {b.key for b in again.button}
    assert any("max-age=0" in h.proto.body for h in again.get("html"))  # ... and the cookie is deleted
    monkeypatch.setattr(cp, "_cookies", lambda: {cp.COOKIE: f"{sid}.not-the-key"})
    forged = goto(ok(AppTest.from_file(HOME, default_timeout=30).run()), "pages/11_Class.py")
    assert cp.SID not in forged.session_state and "class.start" in {b.key for b in forged.button}


def test_a_class_from_start_to_reveal():
    lec = _lecturer(n_items=4, per_student=3, spammer=0, adversary=0, lazy=0)
    key = lec.session_state[cp.KEY]
    assert key not in _page_text(lec)  # the page is on the projector: the key is a download, never text
    assert any(b.proto.label == "Download the lecturer key" for b in lec.get("download_button"))
    click(lec, "class.key_seen")
    assert not any(b.proto.label == "Download the lecturer key" for b in lec.get("download_button"))
    assert any(b.proto.label.startswith("Download the lecturer key (") for b in lec.get("download_button"))
    assert key not in _page_text(lec)
    session = _session(lec)
    assert any(session.join_code in m.value for m in lec.markdown)
    assert any("data:image/svg+xml" in str(i.proto) for i in lec.get("image"))  # the QR code

    phone = _student(session.join_code, "Quiet Otter")
    assert phone.text_input(key=sp.CODE).value == session.join_code  # from the QR code's link
    click(phone, "student.join")
    token = phone.session_state[sp.TOKEN]
    assert phone.query_params["t"] in (token, [token])
    assert any("Quiet Otter" in m.value for m in phone.markdown)
    assert not phone.get("plotly_chart") and not phone.sidebar.markdown  # light: no Plotly, no sidebar
    for _ in range(3):
        assert [b.label for b in phone.button if b.key.startswith("student.answer")] == ["orange", "blue"]
        click(phone, "student.answer.0")
    assert any("All done" in s.value for s in phone.success)
    assert get_store().student(token).voted and len(get_store().student(token).voted) == 3

    ok(lec.run())
    counts = {m.label: m.value for m in lec.metric}
    assert counts["Students joined"] == "1" and counts["Votes counted"] == "3" and counts["Students done"] == "1"
    assert counts["Still answering"] == "0" and counts["Pace (votes a minute)"] == "3"
    assert not lec.get("plotly_chart")  # the live bars are the live chart element, never st.plotly_chart
    click(lec, "class.reveal")
    assert lec.dataframe[-1].value["role"].tolist() == ["Honest"]
    click(phone, "student.check")  # the finished view's button looks for the reveal
    said = " ".join(m.value for m in phone.markdown)
    assert "Honest" in said and "EM (Dawid-Skene) thinks you were right" in said and "you were right" in said
    assert "50% means a coin flip" in said and "Why not 0%, if you were honest?" in said
    assert "Items the class got right, by majority vote" in said
    assert not phone.metric  # every text on the phone is 16 px or more: no metric labels (14 px)


def test_a_reconnecting_phone_resumes_by_its_token():
    lec = _lecturer(n_items=4, per_student=3)
    phone = _student(_session(lec).join_code)
    click(phone, "student.join")
    click(phone, "student.answer.1")
    token = phone.session_state[sp.TOKEN]
    again = AppTest.from_file(JOIN, default_timeout=30)  # a new browser session: only the address remains
    again.query_params["t"] = token
    ok(again.run())
    assert any("1 of 3 answered" in p.proto.text for p in again.get("progress"))


def test_step_through_em_on_the_class_votes():
    lec = _lecturer(n_items=4, per_student=4)
    for k in range(3):
        phone = _student(_session(lec).join_code, f"Student {'ABC'[k]}")
        click(phone, "student.join")
        for _ in range(4):
            click(phone, f"student.answer.{k % 2}")
    click(ok(lec.run()), "class.em")
    data = lec.session_state[state.DATA]
    assert data.n_obs == 12 and data.n_workers == 3 and data.has_gold
    assert lec.session_state[state.DATA_ID].startswith("class:")
    assert any(link.proto.label == "Step through EM" for link in lec.main.get("page_link"))
    goto(lec, "pages/2_Step_through_EM.py")
    click(lec, "stepper.run")
    assert lec.session_state[state.RUN].converged or lec.session_state[state.RUN].stop_reason


def test_wrong_code_and_forged_token_are_refused_with_a_message():
    lec = _lecturer()
    phone = _student("ZZZZZZ" if _session(lec).join_code != "ZZZZZZ" else "YYYYYY")
    click_no_ok = phone.button(key="student.join").click().run()
    assert _errors(click_no_ok) == [safe.md("No class session has this code. Check the code shown on the projector.")]
    forged = AppTest.from_file(JOIN, default_timeout=30)
    forged.query_params["t"] = "forged-token"
    forged.run()
    assert "not valid" in _errors(forged)[0] and forged.button(key="student.leave")
    assert get_store().counts(_session(lec).id, lec.session_state[cp.KEY])["students"] == 0


def test_hostile_pseudonym_is_refused_and_nothing_stored():
    lec = _lecturer()
    phone = _student(_session(lec).join_code, "<script>alert(1)</script>")
    phone.button(key="student.join").click().run()
    assert "The name holds characters a name may not" in " ".join(_errors(phone))
    assert sp.TOKEN not in phone.session_state
    assert get_store().counts(_session(lec).id, lec.session_state[cp.KEY])["students"] == 0


def test_resume_needs_the_lecturer_key():
    lec = _lecturer()
    code, key = _session(lec).join_code, lec.session_state[cp.KEY]
    other = ok(AppTest.from_file(CLASS, default_timeout=30).run())
    other.text_input(key=cp.W + "resume_code").set_value(code)
    other.text_input(key=cp.W + "resume_key").set_value("not the key")
    other.button(key="class.resume").click().run()
    assert "The lecturer key is wrong" in " ".join(_errors(other)) and cp.SID not in other.session_state
    other.text_input(key=cp.W + "resume_key").set_value(key)
    click(other, "class.resume")
    assert other.session_state[cp.SID] == lec.session_state[cp.SID]
    assert not any(key == c.value for c in other.code)  # a resumed session does not show the key again


def test_vote_after_close_and_delete():
    lec = _lecturer(n_items=4, per_student=3)
    phone = _student(_session(lec).join_code)
    click(phone, "student.join")
    click(lec, "class.close")
    ok(phone.run())
    assert any("Voting is closed" in w.value for w in phone.warning)
    assert not [b for b in phone.button if b.key.startswith("student.answer")]
    lec.checkbox(key=cp.W + "confirm_delete").check().run()
    sid = lec.session_state[cp.SID]
    click(lec, "class.delete")
    assert cp.SID not in lec.session_state
    assert get_store()._read("SELECT COUNT(*) FROM students WHERE session_id = ?", (sid,))[0][0] == 0
    phone.run()
    assert "not valid" in _errors(phone)[0]


def test_export_escapes_formulas():
    lec = _lecturer(n_items=2, per_student=2)
    phone = _student(_session(lec).join_code, "Quiet Otter")
    click(phone, "student.join")
    click(phone, "student.answer.0")
    ok(lec.run())
    assert any(b.proto.label.startswith("Download the session") for b in lec.get("download_button"))


def test_uploaded_items_with_hostile_prompts_are_text(tmp_path):
    csv = b"item_id,prompt,truth\nq1,**bold** <script>x</script> $x$,yes\nq2,Plain,no\n"

    class Upload:  # what st.file_uploader returns, enough for read_item_set
        name = "items.csv"

        def getvalue(self):
            return csv

    at = ok(AppTest.from_file(CLASS, default_timeout=30).run())
    at.session_state[cp.W + "kind"] = "upload"
    at.session_state[cp.W + "per_student"] = 2
    ok(at.run())
    # the file uploader cannot be filled by AppTest: items go straight to the store as the callback would
    items = __import__("crowdlab.classroom.items", fromlist=["x"]).read_item_set(Upload(), ["yes", "no"])
    session, _ = get_store().create_session(items, ["yes", "no"], per_student=2)
    phone = _student(session.join_code, "Quiet Otter")
    click(phone, "student.join")
    shown = [s.value for s in phone.subheader]
    assert any(v in (safe.md(items[0].prompt), safe.md(items[1].prompt)) for v in shown)


def test_a_routed_class_hands_items_one_at_a_time_and_compares_routing():
    lec = _lecturer(n_items=6, per_student=3, spammer=0, adversary=0, lazy=0, routing=True)
    session = _session(lec)
    assert session.routing is True
    phone = _student(session.join_code, "Quiet Otter")
    click(phone, "student.join")
    token = phone.session_state[sp.TOKEN]
    assert any("0 of 3 answered" in p.proto.text for p in phone.get("progress"))
    for k in range(3):
        assert len(get_store().student(token).assigned) == k + 1  # handed as the student reaches it
        click(phone, "student.answer.0")
    assert any("All done" in s.value for s in phone.success)
    student = get_store().student(token)
    assert len(student.voted) == 3 and set(student.voted) == set(student.assigned)
    ok(lec.run())
    counts = {m.label: m.value for m in lec.metric}
    assert counts["Students done"] == "1" and counts["Votes counted"] == "3"
    click(lec, "class.routing_go")
    assert not _errors(lec)
    chart = lec.get("plotly_chart")
    spec = chart[-1].proto.spec if chart else ""
    assert '"name":"Dawid-Skene (EM), routing"' in spec and '"name":"majority vote, fixed deal"' in spec
    assert '"name":"Dawid-Skene (EM), our class"' in spec  # our own votes, as markers
    assert any("with routing and" in c.value for c in lec.caption)


@pytest.mark.parametrize("page", ["lecturer", "student"])
def test_an_unusable_class_database_is_a_message_on_both_pages(page, tmp_path, monkeypatch):
    """CROWDLAB_CLASS_DB naming a folder: both class pages say which setting to fix (no traceback, nothing else)."""
    monkeypatch.setenv("CROWDLAB_CLASS_DB", str(tmp_path))
    if page == "lecturer":
        at = AppTest.from_file(HOME, default_timeout=30).run()
        at.switch_page("pages/11_Class.py").run()
    else:
        at = AppTest.from_file(JOIN, default_timeout=30).run()
    assert not at.exception
    assert any("Set CROWDLAB_CLASS_DB" in e.value.replace("\\", "") for e in at.error), _errors(at)
    keys = {w.key for w in [*at.button, *at.text_input]}
    assert "class.start" not in keys and sp.CODE not in keys  # no form that would fail on the first press


def test_a_reload_gets_no_fresh_allowance_of_wrong_codes(monkeypatch):
    """The Join page keys the wrong-code limit on the network address: new browser sessions (reloads) from one address
    share it, and past it that address is told so; another address still joins with the right code."""
    lec = _lecturer()
    code = _session(lec).join_code
    monkeypatch.setattr(sp, "client_address", lambda: "198.51.100.7")
    said = []
    for _ in range(get_store().limits.join_failures_per_client + 2):
        phone = _student("ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY")  # a fresh browser session each time
        said += _errors(phone.button(key="student.join").click().run())
    assert "Too many wrong codes were tried from this network address" in said[-1]
    assert sum("No class session" in m for m in said) == get_store().limits.join_failures_per_client
    monkeypatch.setattr(sp, "client_address", lambda: "198.51.100.8")
    click(_student(code), "student.join")
    assert get_store().counts(_session(lec).id, lec.session_state[cp.KEY])["students"] == 1


def test_the_same_browser_joining_twice_is_one_student():
    lec = _lecturer(n_items=4, per_student=3)
    phone = _student(_session(lec).join_code, "Quiet Otter")
    click(phone, "student.join")
    click(phone, "student.answer.0")
    first = get_store().student(phone.session_state[sp.TOKEN])
    phone.session_state[sp.TOKEN] = None  # a second join from this browser (its id stays in its session)
    phone.query_params.clear()
    phone.session_state[sp.CODE] = _session(lec).join_code
    ok(phone.run())
    click(phone, "student.join")
    again = get_store().student(phone.session_state[sp.TOKEN])
    assert again.id == first.id and again.voted == first.voted
    assert get_store().counts(_session(lec).id, lec.session_state[cp.KEY])["students"] == 1


def test_the_cap_on_sessions_per_address_is_a_message_on_the_class_page(monkeypatch):
    lec = _lecturer(n_items=4, per_student=3)
    store = get_store()
    monkeypatch.setattr(store, "limits", cs.Limits(sessions_per_client=1))
    click(lec, "class.leave")
    lec.button(key="class.start").click().run()
    assert "has started 1 class sessions in the last 1 hour" in " ".join(_errors(lec))
    assert cp.SID not in lec.session_state


def test_a_vote_while_the_database_is_down_says_so_and_keeps_the_student(monkeypatch):
    """The store's lost-connection path (retries, then ClassUnavailable) on the Join page: the student reads that
    the answer was not counted, keeps their token, and the next press counts."""
    lec = _lecturer(n_items=4, per_student=3)
    phone = _student(_session(lec).join_code, "Quiet Otter")
    click(phone, "student.join")
    token = phone.session_state[sp.TOKEN]
    store = get_store()
    monkeypatch.setattr(cs, "RETRY_WAITS", (0.0, 0.0))
    real = store._conn

    def down():
        raise cs._Lost(OSError("server closed the connection unexpectedly"))

    monkeypatch.setattr(store, "_conn", down)
    phone.button(key="student.answer.0").click().run()
    assert not phone.exception
    assert _errors(phone)[0] == safe.md(
        "The class server is not answering: your answer was not counted. Try again in a moment."
    )
    assert "student.retry" in {b.key for b in phone.button}  # the page itself could not be drawn either
    assert phone.session_state[sp.TOKEN] == token
    monkeypatch.setattr(store, "_conn", real)
    click(phone, "student.retry")
    click(phone, "student.answer.0")
    assert len(store.student(token).voted) == 1


def test_a_picture_the_phone_cannot_draw_does_not_break_the_join_page():
    """A picture stored before uploads were checked (an SVG named .png): the item is shown with a sentence instead."""
    from crowdlab.classroom.store import Item

    items = [Item("a", "What is it?", image=b"<svg xmlns='http://www.w3.org/2000/svg'/>"), Item("b", "B")]
    session, _ = get_store().create_session(items, ["yes", "no"], per_student=2)
    phone = _student(session.join_code, "Quiet Otter")
    click(phone, "student.join")
    for _ in range(2):
        if any(s.value == "What is it?" for s in phone.subheader):
            assert any("picture cannot be shown" in c.value for c in phone.caption)
        click(phone, "student.answer.0")
    assert any("All done" in s.value for s in phone.success)


def test_on_the_network_starting_a_class_needs_the_secret_and_joining_does_not(monkeypatch):
    monkeypatch.setattr(cp, "listens_beyond_this_machine", lambda: True)
    monkeypatch.delenv(cp.SECRET_ENV, raising=False)
    at = goto(ok(AppTest.from_file(HOME, default_timeout=30).run()), "pages/11_Class.py")
    assert "class.start" not in {b.key for b in at.button} and "class.resume" in {b.key for b in at.button}
    assert any(cp.SECRET_ENV in w.value for w in at.warning)
    monkeypatch.setenv(cp.SECRET_ENV, "correct horse")
    ok(at.run())
    at.text_input(key=cp.W + "secret").set_value("wrong horse")
    at.button(key="class.start").click().run()
    assert "The class secret is wrong" in " ".join(_errors(at)) and cp.SID not in at.session_state
    assert get_store()._read("SELECT COUNT(*) FROM sessions")[0][0] == 0
    at.text_input(key=cp.W + "secret").set_value("correct horse")
    click(at, "class.start")
    code = _session(at).join_code
    guesser = goto(ok(AppTest.from_file(HOME, default_timeout=30).run()), "pages/11_Class.py")
    for _ in range(get_store().limits.join_failures_per_client):  # wrong secrets: limited per address
        guesser.text_input(key=cp.W + "secret").set_value("a guess")
        guesser.button(key="class.start").click().run()
    guesser.text_input(key=cp.W + "secret").set_value("correct horse")
    guesser.button(key="class.start").click().run()
    assert "Too many wrong class secrets" in " ".join(_errors(guesser)) and cp.SID not in guesser.session_state
    phone = _student(code, "Quiet Otter")  # students need no secret
    click(phone, "student.join")
    assert get_store().counts(at.session_state[cp.SID], at.session_state[cp.KEY])["students"] == 1


def test_listening_beyond_this_machine_is_read_from_the_server_address(monkeypatch):
    from streamlit import config

    for address, beyond in (("127.0.0.1", False), ("localhost", False), ("::1", False), ("0.0.0.0", True),
                            ("", True), ("192.168.1.20", True)):  # fmt: skip
        monkeypatch.setattr(config, "get_option", lambda name, a=address: a if name == "server.address" else None)
        monkeypatch.setattr(cp.st, "get_option", config.get_option)
        assert cp.listens_beyond_this_machine() is beyond, address


@pytest.mark.parametrize("page", ["lecturer", "student"])
@pytest.mark.parametrize(
    "url",
    ["postgresql://127.0.0.1:1/db?password=SECRETPW", "postgresql://u:SECRETPW@[bad/db", "mysql://u:SECRETPW@h/db"],
)
def test_a_class_database_url_never_shows_its_password(page, url, monkeypatch):
    """Issue 42 and 39: the pages name the database by host and name (or refuse a URL the store cannot serve), never
    with the password, and offer no form."""
    pytest.importorskip("psycopg")
    monkeypatch.setattr(cs, "RETRY_WAITS", (0.0,))
    monkeypatch.setenv("CROWDLAB_CLASS_DB", url)
    if page == "lecturer":
        at = AppTest.from_file(HOME, default_timeout=30).run()
        at.switch_page("pages/11_Class.py").run()
    else:
        at = AppTest.from_file(JOIN, default_timeout=30).run()
    assert not at.exception
    said = " ".join(_errors(at)).replace("\\", "")  # the message is escaped for Markdown
    assert "Set CROWDLAB" in said and "SECRETPW" not in said, said
    if "127.0.0.1" in url:
        assert "on 127.0.0.1" in said and "db" in said
    assert "class.start" not in {b.key for b in at.button}


def test_the_export_has_a_student_id_unique_names_and_iso_times():
    lec = _lecturer(n_items=2, per_student=2)
    for _ in range(2):  # two students who keep the same offered name
        phone = _student(_session(lec).join_code, "Quiet Otter")
        click(phone, "student.join")
        click(phone, "student.answer.0")
    ok(lec.run())
    assert any(b.proto.label.startswith("Download the session") for b in lec.get("download_button"))
    frame = cp.export_frame(get_store().votes(lec.session_state[cp.SID], lec.session_state[cp.KEY]))
    assert list(frame.columns) == cp.EXPORT_COLUMNS and frame["student_id"].nunique() == 2
    assert sorted(frame["pseudonym"]) == ["Quiet Otter", "Quiet Otter 2"]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", t) for t in frame["voted"])


def _voters(code: str, n: int, answers=(0, 1)) -> list[str]:
    """``n`` students who answer every item (alternating answers), through the store; their tokens."""
    store = get_store()
    tokens = []
    for k in range(n):
        student, token = store.join(code, f"Voter {k}", client=f"10.0.0.{k}", browser=f"browser-{k:02d}-xxxxxxxxxxxx")
        session = store.session(student.session_id)
        for j, item in enumerate(student.assigned):
            store.vote(token, item, session.choices[answers[(j + k) % len(answers)]])
        tokens.append(token)
    return tokens


def test_the_projector_draws_the_items_and_removes_a_student():
    lec = _lecturer(n_items=4, per_student=3, spammer=0, adversary=0, lazy=0)
    click(lec, "class.key_seen")
    session = _session(lec)
    tokens = _voters(session.join_code, 2)
    ok(lec.run())
    counts = {m.label: m.value for m in lec.metric}
    assert counts["Students joined"] == "2" and counts["Votes counted"] == "6"
    svgs = [i for i in lec.get("image") if "svg" in str(i.proto)]
    assert len(svgs) >= 5  # four items as pictures and the QR code
    assert sum("Which colour has more dots" in m.value for m in lec.markdown) == 1  # the prompt once, not 4 times
    first = get_store().student(tokens[0])
    assert lec.selectbox(key=cp.W + "remove").options == ["Voter 0", "Voter 1"]  # the names the list shows
    ok(lec.selectbox(key=cp.W + "remove").set_value(first.id).run())
    click(lec, "class.remove")
    counts = {m.label: m.value for m in lec.metric}
    assert counts["Students joined"] == "1" and counts["Votes counted"] == "3"
    box = lec.selectbox(key=cp.W + "remove")  # the list follows at once (issue 39 §2), the choice is cleared
    assert box.options == ["Voter 1"] and box.value is None
    phone = AppTest.from_file(JOIN, default_timeout=30)
    phone.query_params["t"] = tokens[0]
    phone.run()
    assert not phone.exception and any("not valid" in e for e in _errors(phone))  # the removed student's page says so


@pytest.mark.parametrize("method", ["ds", "mace"])
def test_predict_then_reveal_on_the_class_page(method):
    lec = _lecturer(n_items=6, per_student=6, spammer=0, adversary=0, lazy=0)
    click(lec, "class.key_seen")
    session = _session(lec)
    tokens = _voters(session.join_code, 4, answers=(0, 0, 1))
    ok(lec.run())
    lec.session_state[cp.W + "step_method"] = method
    click(lec, "class.step_go")
    assert lec.session_state[cp.AT] == 0 and lec.session_state[cp.RUN][1] == method
    click(lec, "class.step_next")
    assert lec.session_state[cp.AT] == 1  # after the first E-step: the next half-step is an M-step
    click(lec, "class.ask.trust")
    qid, q = lec.session_state[cp.ASKED]
    assert q.kind == "trust" and q.answer in q.options and q.target > 1

    phones = []
    for k, token in enumerate(tokens[:3]):
        phone = AppTest.from_file(JOIN, default_timeout=30)
        phone.query_params["t"] = token
        ok(phone.run())
        assert any(safe.md(q.prompt) in m.value for m in phone.markdown)
        click(phone, f"student.predict.{k % len(q.options)}")
        assert any("Your prediction" in m.value for m in phone.markdown)
        phones.append(phone)
    cur = get_store().question(session.id, lec.session_state[cp.KEY])
    assert cur["predicted"] == 3 and cur["status"] == "open"
    ok(lec.run())
    assert any("3 of 4 students have predicted" in c.value for c in lec.caption)
    click(lec, "class.step_run")
    assert lec.session_state[cp.AT] == q.target  # the step ran
    assert get_store().question(session.id, lec.session_state[cp.KEY])["status"] == "revealed"
    ok(lec.run())
    assert any("Most trusted" in s.value for s in lec.success)
    for k, phone in enumerate(phones):
        ok(phone.run())
        mine = q.options[k % len(q.options)]
        shown = [s.value for s in phone.success] + [w.value for w in phone.warning]
        assert any(("right!" if mine == q.answer else "the answer was") in v for v in shown), shown
    click(lec, "class.step_done")
    ok(phones[0].run())
    assert not any("Predict:" in m.value for m in phones[0].markdown)
    assert not lec.get("plotly_chart")
