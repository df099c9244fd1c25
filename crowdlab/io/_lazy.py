"""A module imported on first attribute access, so that ``import crowdlab`` and the command line start without
pandas (about 0.4 s of the start-up) until a reader or a frame really needs it."""

from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """Stands for the module ``name``; the first attribute looked up imports it (then every look-up is forwarded)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_lazy_target"] = None

    def _load(self) -> types.ModuleType:
        mod = self.__dict__["_lazy_target"]
        if mod is None:
            mod = importlib.import_module(self.__name__)
            self.__dict__["_lazy_target"] = mod
        return mod

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)


def lazy(name: str) -> types.ModuleType:
    """``pd = lazy("pandas")``: the already imported module when there is one, else a stand-in that imports it on
    first use."""
    import sys

    mod = sys.modules.get(name)
    return mod if mod is not None else LazyModule(name)
