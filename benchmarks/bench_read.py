"""Reading a long label CSV: crowdlab's reader (all checks on) against pandas.read_csv + factorize.

Run from the repository root::

    .venv/bin/python benchmarks/bench_read.py                  # 10^7 rows (about 150 MB)
    .venv/bin/python benchmarks/bench_read.py --rows 1e6 --repeat 3

The file is written once (cached under ``--dir``, default the system temp folder): ``item,worker,label`` with
string ids such as ``t123``, ``w45`` and part-of-speech tags as labels (n_items = rows / 10, 1,000 workers, 12
classes), in random order. Each side runs in its own fresh subprocess so that ``ru_maxrss`` is that side's peak:

- ``pandas``: ``pd.read_csv(path)`` then ``pd.factorize`` of each of the three columns (the least any reader must
  do to give integer codes);
- ``crowdlab``: ``crowdlab.io.data.read_annotations(path)`` (encoding and binary checks over the whole file,
  delimiter sniffing, stripping, missing-value and header-repeat checks, limits, sorted names, int32 codes).

The script prints both sides and their ratios; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", "PUNCT", "X")


def write_file(path: Path, rows: int, seed: int = 0) -> None:
    """A long CSV of ``rows`` labels with string ids (written in 10^6-row chunks)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_items, n_workers = max(rows // 10, 1), 1000
    tags = np.asarray(TAGS, dtype=object)
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write("item,worker,label\n")
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            item = rng.integers(0, n_items, n)
            worker = rng.integers(0, n_workers, n)
            label = tags[rng.integers(0, len(TAGS), n)]
            f.write("".join(f"t{i},w{w},{lab}\n" for i, w, lab in zip(item.tolist(), worker.tolist(), label)))
    tmp.replace(path)


def side(which: str, path: str) -> dict:
    """Run one side in this process and return its figures."""
    t0 = time.perf_counter()
    if which == "pandas":
        import pandas as pd

        t0 = time.perf_counter()
        frame = pd.read_csv(path)
        codes = [pd.factorize(frame[c])[0] for c in frame.columns]
        n = int(codes[0].size)
    else:
        sys.path.insert(0, str(ROOT))
        from crowdlab.io.data import read_annotations

        t0 = time.perf_counter()
        ann = read_annotations(path)
        n = ann.n_obs
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"side": which, "seconds": seconds, "peak_rss_mb": rss, "rows": n}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=float, default=1e7)
    p.add_argument("--repeat", type=int, default=1, help="runs per side (the best time and its RSS are shown)")
    p.add_argument("--dir", default=tempfile.gettempdir(), help="where the generated CSV is kept")
    p.add_argument("--side", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side:
        print(json.dumps(side(args.side, args.path)))
        return
    rows = int(args.rows)
    path = Path(args.dir) / f"crowdlab_bench_read_{rows}.csv"
    if not path.exists():
        t0 = time.perf_counter()
        write_file(path, rows)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    results = {}
    for which in ("pandas", "crowdlab"):
        runs = []
        for _ in range(args.repeat):
            cmd = [sys.executable, __file__, "--side", which, "--path", str(path)]
            out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
            if out.returncode:
                raise SystemExit(f"{which} failed:\n{out.stderr}")
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        results[which] = min(runs, key=lambda r: r["seconds"])
    pd_, cl = results["pandas"], results["crowdlab"]
    print(f"{rows:,} rows, {path.stat().st_size / 1e6:.0f} MB, load {os.getloadavg()[0]:.1f}")
    print(f"{'':28s}{'seconds':>10s}{'peak RSS MB':>14s}")
    print(f"{'pandas.read_csv+factorize':28s}{pd_['seconds']:10.2f}{pd_['peak_rss_mb']:14.0f}")
    print(f"{'crowdlab.read_annotations':28s}{cl['seconds']:10.2f}{cl['peak_rss_mb']:14.0f}")
    print(f"{'ratio':28s}{cl['seconds'] / pd_['seconds']:10.2f}{cl['peak_rss_mb'] / pd_['peak_rss_mb']:14.2f}")


if __name__ == "__main__":
    main()
