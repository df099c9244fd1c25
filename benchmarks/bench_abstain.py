""" "Can't tell" as a response, not a class (issue 28, section 4), on CrowdFlower's weather sentiment (Venanzi et al.
2014, "CF": 300 tweets, 461 workers, 5 options, the last of the task's options being "cannot tell").

The files do not say which code is which option; this script takes code 4 (the least used, 89 of 1,720 labels) as
"cannot tell", an assumption. The 9 items whose gold is code 4 are left out of the accuracy (a response cannot be a
true class), so every method is scored on the same 291 items: (a) code 4 read as a fifth class, (b) read with
``abstain="4"`` (K = 4 classes, K + 1 responses), (c) the "4" labels dropped.

    .venv/bin/python benchmarks/bench_abstain.py [path/to/crowdflower_weather_sentiment]
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from crowdlab.engines.run import Run
from crowdlab.io.abstain import with_abstentions
from crowdlab.io.data import read_annotations
from crowdlab.models import make_model

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "crowdflower_weather_sentiment"
METHODS = ("mv", "ds", "one_coin", "mace", "mace_vb", "ibcc", "ebcc")


def main(folder: Path) -> None:
    plain = read_annotations(folder / "labels.csv", gold=folder / "gold.csv")
    four = plain.class_names.index("4")
    gold = plain.gold.copy()
    scored = (gold >= 0) & (gold != four)
    no_gold4 = replace(plain, gold=np.where(gold == four, -1, gold))
    responses = with_abstentions(no_gold4, ["4"])
    keep = plain.label != four
    dropped = replace(
        no_gold4,
        item=plain.item[keep],
        worker=plain.worker[keep],
        label=np.where(plain.label[keep] > four, plain.label[keep] - 1, plain.label[keep]),
        class_names=tuple(c for c in plain.class_names if c != "4"),
        gold=responses.gold,
    )
    print(f"{int(scored.sum())} items scored; {int((~keep).sum())} labels are code 4")
    print('| method | 4 as a class | 4 as "can\'t tell" | 4 dropped |')
    print("|---|---:|---:|---:|")
    for key in METHODS:
        accs = []
        for data in (no_gold4, responses, dropped):
            run = Run(data, make_model(key), "majority", max_iter=200)
            run.run()
            lab = run.labels()  # codes 0-3 mean the same classes in all three readings ("4" is the last code)
            accs.append(float((lab[scored] == data.gold[scored]).mean()))
        print(f"| {key} | {accs[0]:.3f} | {accs[1]:.3f} | {accs[2]:.3f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
