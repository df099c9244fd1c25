"""Parameter snapshots of the class-label models: immutable, with the views the UI and the export need.

Conventions (Traganitis & Giannakis): ``gamma[m, k', k] = P(worker m says k' | true class k)``, so each (K, K) matrix
``gamma[m]`` has columns = true class and every column sums to one; ``pi[k] = P(y = k)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class ClassParams:
    """Class prior ``pi`` (K,) and confusion matrices ``gamma`` (M, K, K), plus the model's own parameters.

    ``extra`` holds the model's native parameters (e.g. one-coin ``theta`` (M,), two-coin ``alpha``/``beta``).
    """

    pi: np.ndarray
    gamma: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return int(self.pi.shape[0])

    @property
    def n_workers(self) -> int:
        return int(self.gamma.shape[0])

    def worker_accuracy(self) -> np.ndarray:
        """(M,) P(worker is right) = sum_k pi_k Gamma_m(k, k) under the current class prior."""
        diag = np.diagonal(self.gamma, axis1=1, axis2=2)
        return diag @ self.pi

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        """JSON-ready: lists, names attached when given."""
        out = {"pi": self.pi.tolist(), "gamma": self.gamma.tolist()}
        for k, v in self.extra.items():
            out[k] = np.asarray(v).tolist()
        if worker_names is not None:
            out["workers"] = list(worker_names)
        if class_names is not None:
            out["classes"] = list(class_names)
        out["gamma_convention"] = "gamma[m][k_said][k_true] = P(worker m says k_said | true class k_true)"
        return out
