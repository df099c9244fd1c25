"""How EM runs: the in-memory stepper (:mod:`~crowdlab.engines.run`: ``Run``, ``Snapshot``, the stopping rule),
starts (:mod:`~crowdlab.engines.init`, moment matching in :mod:`~crowdlab.engines.moments`), online EM
(:mod:`~crowdlab.engines.online`), ``fit`` (:mod:`~crowdlab.engines.fit`), and the two out-of-core engines
(:mod:`~crowdlab.engines.stream`, :mod:`~crowdlab.engines.distributed`) with their shared block code
(:mod:`~crowdlab.engines.blocks`). Uses :mod:`crowdlab.models` and :mod:`crowdlab.io` only."""
