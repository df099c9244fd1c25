"""Load of a live class: N real headless Chromium students on phones (375 x 667) join one session and tap their
answers while the lecturer's projector view is open; the store is then checked for lost and duplicated votes.

    .venv/bin/python benchmarks/bench_class.py                       # 40 students x 10 votes
    .venv/bin/python benchmarks/bench_class.py --students 20 --votes 5 --json out.json

What it measures:

* **tap-to-counted**: for the k-th tap of all students (in time order), the time until the projector's "Votes
  counted" first shows k or more (votes are matched to the projector's count in order, so a vote counted late
  delays exactly its own figure); p50, p95, max. The projector refreshes once a second by itself (a fragment), so
  about 0.5 s of each figure is that timer.
* **lost / duplicated**: votes in the database against the taps that the student pages accepted.
* **a predict-then-reveal round** (``predict_round``): once every student is done, the lecturer runs EM on the
  class's votes on the projector and asks who EM will trust most after the next M-step; each phone presses *Look for
  the lecturer's question* 2-10 s later and predicts; tap-to-counted is measured on the projector's "N of M students
  have predicted", lost and duplicated against the predictions table, stalled = phones that did not show the
  question, their prediction, or (after the step runs) the right answer within PAGE_WAIT_S.
* **server memory per student session**: the Streamlit server's RSS with the projector alone open, then with every
  student on their first item, divided by the number of students (Python's allocator keeps freed memory, so this
  is an upper bound on what one session costs).

Students think 4-16 s before each tap (uniform; ``--think``): a dozen items in two minutes, the pace of the class
the feature is for (``--think 0.4 1.2`` is a stress test, ten times the rate); the server runs in its own process
with a temporary data folder (SQLite). Chromium is Debian's /usr/bin/chromium (never a Playwright download).
Students join four at a time (a class arrives over a minute or so; forty Chromium page loads at once time out on
a loaded 2-core machine), then all tap together.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowdlab.classroom import items as ci  # noqa: E402
from crowdlab.classroom.store import ClassStore  # noqa: E402
from tests.e2e.helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, LAST_SERVER, streamlit_server  # noqa: E402

PHONE = {"width": 375, "height": 667}
JOINING_AT_ONCE = 4
# a student's pause before each tap, uniform in seconds: a mean of 10 s is "a dozen items in two minutes", the
# class the live-class feature is built for
THINK = (4.0, 16.0)
# how long a student's page may take to show its next state before it counts as stalled (the stalled pages of the
# README never recovered within 300 s: waiting longer only lengthens the run; a healthy page takes under 5 s)
PAGE_WAIT_S = 90
PREDICT_THINK = (2.0, 10.0)  # seconds before a phone looks for the question and predicts (uniform)
CATCH_UP_S = 15  # seconds the projector may still take to count the last votes once every page is done
COUNT_JS = """() => { const m = Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
    .find(m => m.innerText.includes('Votes counted'));
  return m ? parseInt(m.querySelector('[data-testid="stMetricValue"]').innerText.replace(/,/g, ''), 10) : -1; }"""


def _cpu_s(pids) -> float:
    """CPU seconds (user + system) used so far by the processes ``pids`` (gone ones count 0)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def _chromium_pids() -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if b"chromium" in (d / "cmdline").read_bytes()[:200]:
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _rss(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _student(browser, url, code, n_votes, joined, go, taps, errors, rng, door, think):
    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = await context.new_page()
    page.set_default_timeout(PAGE_WAIT_S * 1000)
    try:
        async with door:  # students come in a few at a time (loading the page is the heavy part for Chromium)
            await page.goto(f"{url}/Join?code={code}", wait_until="commit")
            await page.get_by_role("button", name="Join", exact=True).click()
            await page.get_by_text(f"0 of {n_votes} answered").wait_for()
        joined.append(1)
        await go.wait()
        for k in range(n_votes):
            await page.get_by_text(f"{k} of {n_votes} answered").wait_for()
            await asyncio.sleep(rng.uniform(*think))
            button = page.get_by_role("button", name=rng.choice(ci.DOT_CHOICES), exact=True)
            await button.wait_for()
            taps.append(time.time())
            await button.click()
        await page.get_by_text(f"{n_votes} of {n_votes} answered").wait_for()
    except Exception as exc:  # reported in the summary, with what the page showed then (text and a screenshot)
        shown = ""
        try:
            shown = " ".join((await page.locator('[data-testid="stMain"]').inner_text(timeout=5000)).split())[:300]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / f"class_load_stalled_{len(errors)}.png"), timeout=10000)
        except Exception:  # noqa: BLE001 - the page may be gone
            pass
        errors.append(f"{repr(exc)[:200]} | page shows: {shown}")
    return context, page


PREDICTED_JS = """() => { const m = document.body.innerText.match(/(\\d+) of (\\d+) students have predicted/);
  return m ? parseInt(m[1], 10) : -1; }"""


async def _predictor(page, rng, taps, errors, think):
    """One phone in a predict-then-reveal round: look for the question, predict, then see the right answer."""
    try:
        await asyncio.sleep(rng.uniform(*think))
        await page.get_by_role("button", name="Look for the lecturer's question").click()
        await page.get_by_text("Predict:").wait_for()
        options = page.locator('[class*="st-key-student-predict-"] button')
        await options.first.wait_for()
        n = await options.count()
        button = options.nth(rng.randrange(n))
        taps.append(time.time())
        await button.click()
        await page.get_by_text("Your prediction:").wait_for()
    except Exception as exc:  # noqa: BLE001 - reported in the summary
        errors.append(f"predict: {repr(exc)[:200]}")


async def _answer_seen(page, errors):
    try:
        await page.get_by_role("button", name="Look for the lecturer's question").click()
        await page.get_by_text(re.compile("right!|the answer was")).wait_for()
    except Exception as exc:  # noqa: BLE001 - reported in the summary
        errors.append(f"answer: {repr(exc)[:200]}")


async def _predict_round(projector, pages, store, session, key, think) -> dict:
    """The lecturer runs EM on the class's votes, steps to after the first E-step and asks who EM will trust most
    after the next M-step; every phone predicts (after a pause in ``think``); the projector counts the predictions;
    the step runs and every phone shows the right answer."""
    await projector.get_by_role("button", name="Run EM on our votes").click()
    await projector.get_by_role("button", name="Next half-step").click()
    await asyncio.sleep(1.5)
    await projector.get_by_role("button", name="Who will EM trust most?").click()
    await projector.get_by_text("students have predicted").wait_for()
    taps: list[float] = []
    errors: list[str] = []
    seen: list[tuple[float, int]] = []
    load = []
    t0 = time.time()
    tasks = [asyncio.create_task(_predictor(pg, random.Random(100 + k), taps, errors, think))
             for k, pg in enumerate(pages)]  # fmt: skip
    done = asyncio.gather(*tasks)
    last, finished = -1, None
    while True:
        count = await projector.evaluate(PREDICTED_JS)
        if count != last:
            seen.append((time.time(), count))
            last = count
        if done.done() and finished is None:
            finished = time.time()
            load.append(os.getloadavg()[0])
        if finished is not None and (count >= len(taps) or time.time() - finished > CATCH_UP_S):
            break
        await asyncio.sleep(0.1)
    await done
    predicting_s = time.time() - t0
    cur = store.question(session.id, key)
    rows = store._read("SELECT student_id FROM predictions WHERE question_id = ?", (cur["id"],))
    taps.sort()
    lat = [next((ts for ts, c in seen if c >= k), np.nan) - t for k, t in enumerate(taps, start=1)]
    lat_a = np.array(lat or [np.nan])
    await projector.get_by_role("button", name="Run the step and show the answers").click()
    await projector.get_by_text("Most trusted").wait_for()
    t1 = time.time()
    answer_errors: list[str] = []
    await asyncio.gather(*[_answer_seen(pg, answer_errors) for pg in pages])
    return {
        "phones": len(pages),
        "predicted_taps": len(taps),
        "predictions_stored": len(rows),
        "lost": len(taps) - len(rows),
        "duplicated": len(rows) - len({r[0] for r in rows}),
        "stalled": len(errors) + len(answer_errors),
        "errors": (errors + answer_errors)[:5],
        "tap_to_counted_p50_s": round(float(np.nanpercentile(lat_a, 50)), 3),
        "tap_to_counted_p95_s": round(float(np.nanpercentile(lat_a, 95)), 3),
        "load_average_at_end": round(load[0], 1) if load else None,
        "predicting_s": round(predicting_s, 1),
        "answer_on_every_phone_s": round(time.time() - t1, 1),
    }


async def _run(
    url: str, db: Path, n_students: int, n_votes: int, think: tuple[float, float], predict: bool = True
) -> dict:
    from playwright.async_api import async_playwright

    store = ClassStore(str(db))
    items = ci.dot_items(max(12, n_votes), 0.5, seed=0)
    session, key = store.create_session(items, ci.DOT_CHOICES, per_student=n_votes, title="Load test")
    server_pid = LAST_SERVER[0].pid
    out: dict = {"students": n_students, "votes_each": n_votes, "think_s": list(think)}
    async with async_playwright() as p:
        # no throttling of pages Chromium thinks are in the background: the projector's timer must keep its pace
        args = [*CHROMIUM_ARGS, "--disable-background-timer-throttling", "--disable-renderer-backgrounding"]
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        lecturer = await browser.new_context(viewport={"width": 1400, "height": 1000})
        projector = await lecturer.new_page()
        projector.set_default_timeout(120_000)
        await projector.goto(url + "/Class")
        await projector.get_by_text("Resume a session").click()
        await projector.get_by_label("Join code").fill(session.join_code)
        await projector.get_by_label("Lecturer key").fill(key)
        await projector.get_by_role("button", name="Resume", exact=True).click()
        await projector.wait_for_function(f"() => ({COUNT_JS})() === 0")
        await asyncio.sleep(2)
        out["rss_projector_mb"] = _rss(server_pid)

        joined: list = []
        taps: list[float] = []
        errors: list[str] = []
        go = asyncio.Event()
        door = asyncio.Semaphore(JOINING_AT_ONCE)
        t0 = time.time()
        tasks = [
            asyncio.create_task(
                _student(
                    browser, url, session.join_code, n_votes, joined, go, taps, errors, random.Random(k), door, think
                )  # fmt: skip
            )
            for k in range(n_students)
        ]
        while len(joined) + len(errors) < n_students and time.time() - t0 < 900:
            await asyncio.sleep(0.2)
        out["join_all_s"] = round(time.time() - t0, 1)
        await asyncio.sleep(2)
        out["rss_students_mb"] = _rss(server_pid)
        out["mb_per_student_session"] = round((out["rss_students_mb"] - out["rss_projector_mb"]) / n_students, 2)
        seen: list[tuple[float, int]] = []
        cpu0 = (_cpu_s([server_pid]), _cpu_s(_chromium_pids()), time.time())
        go.set()
        done = asyncio.gather(*tasks)
        last = -1
        finished = None
        while True:
            count = await projector.evaluate(COUNT_JS)
            if count != last:
                seen.append((time.time(), count))
                last = count
            if done.done() and finished is None:
                finished = time.time()
            # every page has finished (or stalled): the projector gets CATCH_UP_S more to count the last votes
            if finished is not None and (count >= len(taps) or time.time() - finished > CATCH_UP_S):
                break
            await asyncio.sleep(0.1)
        contexts = await done
        out["load_average_tapping"] = round(os.getloadavg()[0], 1)
        span = time.time() - cpu0[2]
        out["tapping_s"] = round(span, 1)
        out["server_cpu_share"] = round((_cpu_s([server_pid]) - cpu0[0]) / span, 2)  # cores the server kept busy
        out["chromium_cpu_share"] = round((_cpu_s(_chromium_pids()) - cpu0[1]) / span, 2)
        out["rss_end_mb"] = _rss(server_pid)
        if predict:
            pages = [pg for _, pg in contexts]
            out["predict_round"] = await _predict_round(projector, pages, store, session, key, PREDICT_THINK)
        for c, _ in contexts:
            await c.close()
        await browser.close()
    votes = store.votes(session.id, key)
    pairs = {(v["student_id"], v["item_id"]) for v in votes}
    taps.sort()
    lat = []
    for k, t in enumerate(taps, start=1):
        counted = next((ts for ts, c in seen if c >= k), None)
        if counted is not None:
            lat.append(counted - t)
    lat_a = np.array(lat) if lat else np.array([np.nan])
    # the two halves: tap -> stored in the database (the phone's round trip), stored -> shown on the projector
    stored = sorted(float(v["voted"]) for v in votes)
    to_db = np.array([v - t for v, t in zip(stored, taps, strict=False)] or [np.nan])
    to_proj = [next((ts for ts, c in seen if c >= k), np.nan) - s for k, s in enumerate(stored, start=1)]
    to_proj_a = np.array(to_proj or [np.nan])
    out |= {
        "taps": len(taps),
        "votes_stored": len(votes),
        "lost": len(taps) - len(votes),
        "duplicated": len(votes) - len(pairs),
        "errors": errors[:5],
        "n_errors": len(errors),
        "stalled": len(errors),  # pages that did not reach their last answer within PAGE_WAIT_S
        "tap_to_counted_p50_s": round(float(np.percentile(lat_a, 50)), 3),
        "tap_to_counted_p95_s": round(float(np.percentile(lat_a, 95)), 3),
        "tap_to_counted_max_s": round(float(lat_a.max()), 3),
        "never_counted": len(taps) - len(lat),
        "tap_to_stored_p95_s": round(float(np.nanpercentile(to_db, 95)), 3),
        "stored_to_projector_p95_s": round(float(np.nanpercentile(to_proj_a, 95)), 3),
        "wall_s": round(time.time() - t0, 1),
    }
    store.close()
    return out


def run_load(n_students: int = 40, n_votes: int = 10, think: tuple[float, float] = THINK, predict: bool = True) -> dict:
    """Start a server with a temporary data folder, run the load, return the figures (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        with streamlit_server({"CROWDLAB_DATA_DIR": tmp}, log_name="streamlit_load.log") as url:
            # a thread of its own: under pytest, playwright's sync API may already run an event loop in this one
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                job = pool.submit(asyncio.run, _run(url, Path(tmp) / "class.db", n_students, n_votes, think, predict))
                return job.result()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=40)
    ap.add_argument("--votes", type=int, default=10)
    ap.add_argument("--think", type=float, nargs=2, default=THINK, metavar=("MIN", "MAX"),
                    help="seconds a student thinks before each tap, uniform (default %(default)s: a dozen items in "
                    "two minutes; 0.4 1.2 is a stress test)")  # fmt: skip
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--no-predict", action="store_true", help="leave out the predict-then-reveal round")
    args = ap.parse_args()
    load0 = round(os.getloadavg()[0], 1)
    out = run_load(args.students, args.votes, tuple(args.think), predict=not args.no_predict)
    out["machine"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"
    out["load_average_start"] = load0
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
