"""The datasets bundled in ``sample_data/``: a registry and a loader.

Each folder holds ``labels.csv`` (``item,worker,label``), ``gold.csv`` (``item,label``; header only when there
is no gold) and ``SOURCE.md`` (origin and citation). ``sample_data/README.md`` tabulates them.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from crowdlab.io.annotations import Annotations

__all__ = ["SAMPLES", "SEQUENCE_SAMPLES", "Sample", "load_sample", "sample_paths", "sample_root"]


@dataclass(frozen=True)
class Sample:
    """One bundled dataset: ``folder`` under :func:`sample_root`, kind of labels, a one-line description."""

    key: str
    title: str
    folder: str
    kind: Literal["classes", "continuous", "sequences"]
    description: str
    has_gold: bool


SAMPLES: dict[str, Sample] = {
    s.key: s
    for s in (
        Sample(
            "bluebirds",
            "Bluebirds (Welinder et al. 2010)",
            "welinder2010_bluebirds",
            "classes",
            "108 images, 39 workers who each label every image, 2 look-alike species: EM beats majority vote.",
            True,
        ),
        Sample(
            "rte",
            "Textual entailment (Snow et al. 2008)",
            "snow2008_rte",
            "classes",
            "800 sentence pairs, 164 Turk workers, 10 binary labels per item: the classic binary set.",
            True,
        ),
        Sample(
            "patients",
            "Anaesthetic patients (Dawid & Skene 1979)",
            "dawid_skene1979_patients",
            "classes",
            "45 patients, 5 observers, 4 classes; observer 1 rated each patient 3 times; no gold.",
            False,
        ),
        Sample(
            "dogs",
            "Dog breeds (Zhou et al. 2012)",
            "zhou2012_dogs",
            "classes",
            "807 images, 109 workers, 4 breeds, about 10 labels per image: sparse and multi-class.",
            True,
        ),
        Sample(
            "affect",
            "Affective text scores (Snow et al. 2008)",
            "snow2008_affect",
            "continuous",
            "700 headline x emotion items scored 0-100 by 38 workers: the good/bad scorer model.",
            True,
        ),
        Sample(
            "judges",
            "LLM judges of agent trajectories (Mohammadi 2026)",
            "mohammadi2026_trajectory_judges",
            "classes",
            "400 agent trajectories, 5 LLM and rule judges with their confidences (soft votes); two judges copy.",
            True,
        ),
        Sample(
            "simulated",
            "Simulated crowd (15 workers, 2 spammers, 1 adversary)",
            "simulated_crowd",
            "classes",
            "600 items, 3 classes, 4 labels per item, known confusion matrices (truth.json): check recovery.",
            True,
        ),
    )
}


# Dependent data (Traganitis & Giannakis, Secs. 4-5) has its own registry: the pages for independent items list SAMPLES.
SEQUENCE_SAMPLES: dict[str, Sample] = {
    "ner": Sample(
        "ner",
        "CoNLL-2003 named entities, validation split (Rodrigues et al. 2014)",
        "rodrigues2014_conll_ner_val",
        "sequences",
        "2,800 sentences (39,025 tokens), 46 Turk workers, 9 BIO tags, about 5 labels per token.",
        True,
    ),
}


def _candidates() -> tuple[Path, Path]:
    here = Path(__file__).resolve().parents[1]  # the crowdlab package folder
    # installed (pip install .): the wheel maps sample_data/ into the package as crowdlab/sample_data/;
    # a checkout (or pip install -e .): sample_data/ at the top of the repository, next to crowdlab/
    return here / "sample_data", here.parent / "sample_data"


def sample_root() -> Path:
    """The ``sample_data`` folder: inside the installed package, or at the top of a checkout."""
    for folder in _candidates():
        if (folder / "README.md").is_file():
            return folder
    looked = " and ".join(str(c) for c in _candidates())
    raise FileNotFoundError(errno.ENOENT, f"crowdlab's sample_data folder is missing (looked in {looked})", looked)


def _get(key: str) -> Sample:
    found = SAMPLES.get(key) or SEQUENCE_SAMPLES.get(key)
    if found is None:
        raise KeyError(f"unknown sample {key!r}; choose one of {sorted(SAMPLES) + sorted(SEQUENCE_SAMPLES)}.")
    return found


def sample_paths(key: str) -> tuple[Path, Path | None]:
    """(labels.csv, gold.csv or None) of a bundled dataset; gold is None when the set has no gold."""
    sample = _get(key)
    folder = sample_root() / sample.folder
    gold = folder / "gold.csv"
    return folder / "labels.csv", (gold if sample.has_gold and gold.exists() else None)


def load_sample(key: str) -> Annotations:
    """Read a bundled dataset into :class:`~crowdlab.io.annotations.Annotations` (name = the sample's title)."""
    from crowdlab.io.data import read_annotations
    from crowdlab.io.sequences import read_sequences

    sample = _get(key)
    labels, gold = sample_paths(key)
    if sample.kind == "sequences":
        return read_sequences(labels, gold=gold, name=sample.title)
    return read_annotations(labels, gold=gold, kind=sample.kind, name=sample.title)
