"""How long one Step click takes on the Step page, under ``streamlit.testing.v1.AppTest``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_step.py                      # 10,000 items x 10 workers, K = 4, and bluebirds
    .venv/bin/python benchmarks/bench_step.py --items 100000 --clicks 10
    .venv/bin/python benchmarks/bench_step.py --tabs                # also one timing per tab of the panel

The simulated crowd is ``simulate_crowd(items, workers, K, labels_per_item=10)`` (100,000 labels by default). It is
put into the session state before the first run (as the Data page would), then the Step button is clicked
``--clicks`` times after ``--warmup`` clicks; each click is one AppTest rerun: the callback runs one EM iteration
(an E-step and an M-step, each with its objective and bound), then the page draws the objective curve, the
metrics against gold and the open tab from the stored snapshots. The figure printed is the median wall time of
those reruns (target: under 150 ms). AppTest reruns the whole page script on every click; in a browser a Step
reruns only the stepper fragment, so this is an upper bound. The time of the engine step alone
(:meth:`crowdlab.engines.run.Run.step` on the same data) is printed beside it.

The script prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from crowdlab.engines.run import Run  # noqa: E402
from crowdlab.io.samples import load_sample  # noqa: E402
from crowdlab.models import make_model  # noqa: E402
from crowdlab.teaching.simulate import simulate_crowd  # noqa: E402
from crowdlab.ui import panels, state  # noqa: E402

STEP_PAGE = str(ROOT / "pages" / "2_Step_through_EM.py")


def _ms(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1e3:7.1f} ms  (min {min(values) * 1e3:.1f}, max {max(values) * 1e3:.1f})"
    )


def time_clicks(data_id: str, data, clicks: int, warmup: int, tab: str | None = None) -> list[float]:
    """Wall time of ``clicks`` Step reruns under AppTest, after ``warmup`` untimed ones."""
    at = AppTest.from_file(STEP_PAGE, default_timeout=120)
    at.session_state[state.DATA_ID] = data_id
    at.session_state[state.DATA] = data
    at.session_state[state.DATA_SOURCE] = None
    if tab is not None:
        at.session_state[state.VIEW_PREFIX + "tab"] = tab
    at.run()
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    times = []
    for i in range(warmup + clicks):
        t0 = time.perf_counter()
        at.button(key="stepper.step").click().run()
        dt = time.perf_counter() - t0
        if at.exception:
            raise RuntimeError(at.exception[0].value)
        if i >= warmup:
            times.append(dt)
    run = at.session_state[state.RUN]
    assert run.iteration == warmup + clicks, run.iteration
    return times


def time_engine(data, clicks: int, warmup: int, method: str = "ds") -> list[float]:
    run = Run(data, make_model(method))
    times = []
    for i in range(warmup + clicks):
        t0 = time.perf_counter()
        run.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=10)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--labels-per-item", type=int, default=10)
    ap.add_argument("--clicks", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--tabs", action="store_true", help="also time a Step with each tab open")
    args = ap.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)

    sim = simulate_crowd(
        args.items, args.workers, args.classes, labels_per_item=args.labels_per_item, seed=0
    ).annotations
    blue = load_sample("bluebirds")
    cases = [
        (f"simulated {args.items:,} items x {args.workers} workers, K = {args.classes} ({sim.n_obs:,} labels)", sim),
        (f"bluebirds ({blue.n_items} items x {blue.n_workers} workers, {blue.n_obs:,} labels)", blue),
    ]
    print(f"Step rerun under AppTest, Dawid-Skene, {args.clicks} clicks after {args.warmup} warm-up clicks")
    for name, data in cases:
        print(f"\n{name}")
        print(f"  Step rerun (Posterior tab open): {_ms(time_clicks('bench:' + name, data, args.clicks, args.warmup))}")
        print(f"  engine Run.step() alone:         {_ms(time_engine(data, args.clicks, args.warmup))}")
        if args.tabs:
            for tab in panels.TABS[1:]:
                times = time_clicks("bench:" + name, data, max(args.clicks // 2, 3), args.warmup, tab=tab)
                print(f"  Step rerun ({tab} tab open):{' ' * max(0, 18 - len(tab))} {_ms(times)}")


if __name__ == "__main__":
    main()
