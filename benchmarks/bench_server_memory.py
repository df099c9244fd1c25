"""The server's memory across sessions: does a closed browser tab give its data back?

Run from the repository root (needs Debian's /usr/bin/chromium and the playwright package)::

    .venv/bin/python benchmarks/bench_server_memory.py                # 2 sessions, 50,000-row uploads
    .venv/bin/python benchmarks/bench_server_memory.py --sessions 4 --rows 100000 --ttl 10

A fresh ``streamlit run app.py`` starts on a free port with ``server.disconnectedSessionTTL`` = ``--ttl`` seconds
(Streamlit keeps a closed tab's session that long for a reconnect; 120 by default). One warm-up session opens the
Data page and closes, so that the imports and the bundled sample are in memory; its release is awaited and the
server's resident memory (VmRSS) is the baseline. Then, for each of ``--rounds`` rounds, ``--sessions`` sessions
each choose a label file of ``--rows`` rows of their own (``item,worker,label``; 10 labels per item) and press
Load; once all show "Loaded" the memory is read (loaded); the tabs close, and after the TTL and the
release's sweep it is read again (closed). Memory a closed session kept would pile up round after round; what
the first round's imports and allocator keep stays flat. The script prints the numbers; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` and its children (Linux /proc), in MB."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def labels_file(rows: int, seed: int) -> bytes:
    """``rows`` labels: items of 10 labels each, 50 workers, 3 classes (a file of its own for each seed)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    item = np.arange(rows) // 10
    worker = rng.integers(0, 50, rows)
    label = rng.integers(0, 3, rows)
    lines = [f"s{seed}_i{i},w{w},c{c}" for i, w, c in zip(item.tolist(), worker.tolist(), label.tolist(), strict=True)]
    return ("item,worker,label\n" + "\n".join(lines) + "\n").encode()


def start_server(ttl: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    cmd += ["--server.headless", "true", "--server.fileWatcherType", "none"]
    cmd += ["--server.disconnectedSessionTTL", str(ttl)]
    log = open(Path(tempfile.gettempdir()) / "bench_server_memory.log", "w")  # noqa: SIM115 - the server's log
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("streamlit did not start")


def wait_drawn(page) -> None:
    page.locator('[data-testid="stSidebar"]').get_by_text("Current dataset").wait_for()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--ttl", type=int, default=10, help="server.disconnectedSessionTTL, seconds")
    ap.add_argument("--settle", type=float, default=15.0, help="seconds waited after the TTL for the release")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of uploads (new files each round)")
    args = ap.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"needs {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    files = [labels_file(args.rows, k) for k in range(args.sessions)]
    proc, url = start_server(args.ttl)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            warm = browser.new_context()
            page = warm.new_page()
            page.set_default_timeout(120_000)
            page.goto(url + "/Data")
            wait_drawn(page)
            warm.close()
            time.sleep(args.ttl + args.settle)
            base = rss_mb(proc.pid)
            rounds = []
            for r in range(args.rounds):
                contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in files]
                t0 = time.perf_counter()
                for k, (ctx, content) in enumerate(zip(contexts, files, strict=True)):
                    page = ctx.new_page()
                    page.set_default_timeout(300_000)
                    page.goto(url + "/Data")
                    wait_drawn(page)
                    box = page.locator('[data-testid="stFileUploader"]').first.locator('input[type="file"]')
                    name = f"bench{r}_{k}.csv"
                    box.set_input_files(
                        {"name": name, "mimeType": "text/csv", "buffer": content + f"r{r},w0,c0\n".encode()}
                    )
                    page.locator('[data-testid="stFileChipName"]').first.wait_for()
                    for attempt in range(3):  # a tree where a press can be lost (before issue 31) needs a second
                        page.get_by_role("button", name="Load", exact=True).click()
                        try:
                            page.get_by_text(f"Loaded '{name}'").wait_for(timeout=60_000)
                            break
                        except Exception:  # noqa: BLE001 - pressed again below
                            if attempt == 2:
                                raise
                load_s = time.perf_counter() - t0
                time.sleep(3)
                loaded = rss_mb(proc.pid)
                for ctx in contexts:
                    ctx.close()
                time.sleep(args.ttl + args.settle)
                rounds.append((loaded, rss_mb(proc.pid), load_s))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    print(f"{args.sessions} sessions x {args.rows:,}-row uploads ({len(files[0]) / 1e6:.1f} MB each), TTL {args.ttl} s")
    print(f"  baseline {base:7.1f} MB (after a warm-up session that opened the Data page)")
    for r, (loaded, closed, load_s) in enumerate(rounds):
        print(
            f"  round {r + 1}: loaded {loaded:7.1f} MB (+{loaded - base:.1f}, {load_s:.1f} s),"
            f" closed {closed:7.1f} MB (+{closed - base:.1f} over the baseline)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
