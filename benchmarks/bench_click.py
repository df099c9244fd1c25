"""How long a Step click takes in a real browser: from the click to a settled page, and where the time goes.

Run from the repository root (Debian's chromium at /usr/bin/chromium; nothing is downloaded)::

    .venv/bin/python benchmarks/bench_click.py                     # bluebirds, then trec2010_relevance
    .venv/bin/python benchmarks/bench_click.py --clicks 8 --datasets bluebirds
    .venv/bin/python benchmarks/bench_click.py --trec /work/shared/datasets/trec2010_relevance

It starts ``streamlit run app.py`` on a free port, opens the Step page at 1024x768 in headless Chromium, loads
the dataset (bluebirds is the default; TREC 2010 relevance, 20,232 items and 98,453 labels with partial gold, is
uploaded through the Data page), then clicks Step ``--clicks`` times after one warm-up click. Each click is timed
in the page with ``performance.now()`` and a MutationObserver on the main area:

- ``first change``: the first DOM change after the click, i.e. the server has run the callback and the EM step
  and sent its first element back (server time plus one round trip);
- ``label``: the position label shows the new iteration (the stepper's body has been drawn on the server);
- ``charts start``: plotly starts redrawing the first chart (its new figure has arrived from the server);
- ``settled``: the last DOM change before 300 ms of quiet (every chart redrawn by plotly in the browser).

``charts start`` is mostly the server's rerun (callback, EM step, figures built and serialised) and the round
trip; ``settled - charts start`` is the browser redrawing the charts (plotly rebuilds each SVG).
The engine step alone (:meth:`crowdlab.engines.run.Run.step`, no Streamlit) is printed beside them. Medians over the
clicks; the script prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowdlab.engines.run import Run  # noqa: E402
from crowdlab.io.data import read_annotations  # noqa: E402
from crowdlab.io.samples import load_sample  # noqa: E402
from crowdlab.models import make_model  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
TREC = Path("/work/shared/datasets/trec2010_relevance")

# Arm before the click: records the time of every DOM change in the main area and when the label shows `want`.
ARM = """
(want) => {
  const main = document.querySelector('[data-testid="stMain"]');
  window.__bench = {t0: performance.now(), first: null, last: null, label: null, plot0: null, plot: null, other: null};
  const b = window.__bench;
  if (window.__obs) window.__obs.disconnect();
  window.__obs = new MutationObserver((records) => {
    const now = performance.now();
    if (b.first === null) b.first = now;
    b.last = now;
    for (const r of records) {
      const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (el && el.closest('.js-plotly-plot')) {
        if (b.plot0 === null) b.plot0 = now;
        b.plot = now;
      } else b.other = now;
    }
    if (b.label === null && main.innerText.includes(want)) b.label = now;
  });
  window.__obs.observe(main, {subtree: true, childList: true, characterData: true, attributes: true});
}
"""
READ = (
    "() => { const b = window.__bench; return {first: b.first - b.t0, label: b.label === null ? null : "
    "b.label - b.t0, last: b.last - b.t0, plot0: (b.plot0 || b.t0) - b.t0, plot: (b.plot || b.t0) - b.t0, "
    "other: (b.other || b.t0) - b.t0}; }"
)


def _server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [str(Path(sys.executable).with_name("streamlit")), "run", "app.py", "--server.port", str(port)]
    cmd += ["--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    cmd += ["--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("streamlit did not start")


def _idle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !/Running/.test(document.querySelector('[data-testid=\"stStatusWidget\"]').innerText)",
        timeout=120_000,
    )


def _upload(page, url: str, folder: Path) -> None:
    page.goto(url + "/Data")
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    _idle(page)
    for i, name in enumerate(("labels.csv", "gold.csv")):
        up = page.locator('[data-testid="stFileUploader"]').nth(i)
        up.locator('input[type="file"]').set_input_files(str(folder / name))
        up.locator(f'[data-testid="stFileChipName"][title="{name}"]').wait_for(timeout=120_000)
        _idle(page)
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Dataset changed: the run was reset.").first.wait_for(timeout=120_000)
    _idle(page)


def _click_times(page, clicks: int) -> list[dict]:
    step = page.locator('[data-testid="stMain"]').get_by_role("button", name="Step", exact=True)
    out = []
    for i in range(1, clicks + 2):
        page.evaluate(ARM, f"iteration {i}, after M-step")
        step.click()
        page.get_by_text(f"iteration {i}, after M-step").first.wait_for(timeout=120_000)
        page.wait_for_function("() => performance.now() - window.__bench.last > 300", timeout=120_000)
        if i > 1:  # the first click warms up (first figures, caches)
            out.append(page.evaluate(READ))
    return out


def _engine(data, clicks: int) -> float:
    run = Run(data, make_model("ds"))
    run.step()
    times = []
    for _ in range(clicks):
        t = time.perf_counter()
        run.step()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clicks", type=int, default=6)
    ap.add_argument("--datasets", default="bluebirds,trec2010_relevance")
    ap.add_argument("--trec", type=Path, default=TREC)
    ap.add_argument("--present", action="store_true", help="presenter mode (?present=1)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    proc, url = _server()
    q = "?present=1" if args.present else ""
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            print(
                f"{'dataset':<20}{'first change':>13}{'label':>7}{'charts start':>14}{'settled':>9}"
                f"{'engine step':>13}  (median ms after the click)"
            )
            for name in args.datasets.split(","):
                page = browser.new_page(viewport={"width": 1024, "height": 768})
                page.set_default_timeout(120_000)
                if name == "bluebirds":
                    data = load_sample("bluebirds")
                else:
                    data = read_annotations(args.trec / "labels.csv", gold=args.trec / "gold.csv")
                    _upload(page, url, args.trec)
                page.goto(url + "/Step_through_EM" + q) if name == "bluebirds" else None
                if name != "bluebirds":  # keep the session: go through the sidebar link
                    page.locator('[data-testid="stSidebar"]').get_by_role("link", name="Step through EM").click()
                page.get_by_text("iteration 0, initialisation").first.wait_for()
                _idle(page)
                times = _click_times(page, args.clicks)
                keys = ("first", "label", "plot0", "last")
                med = {k: statistics.median(t[k] for t in times) for k in keys}
                engine = _engine(data, args.clicks) * 1000
                print(
                    f"{name:<20}{med['first']:>13.0f}{med['label']:>7.0f}{med['plot0']:>14.0f}{med['last']:>9.0f}"
                    f"{engine:>13.0f}"
                )
                page.close()
            browser.close()
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()
