"""Run at the start of every Python process below one that `app.client.hook` hooked (its
folder is first on their PYTHONPATH): hook this process too, then run the sitecustomize
module that this one stands in front of, if the environment has one."""

import contextlib
import importlib.util
import sys
from importlib.machinery import PathFinder
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[2]  # the folder holding the `app` package

if importlib.util.find_spec("app") is None:  # run from a checkout rather than installed
    sys.path.append(str(_ROOT))
# Where errkb cannot load (another interpreter, another `app`), the process runs unhooked
# and undisturbed: a child must never fail to start because of errkb.
with contextlib.suppress(Exception):
    importlib.import_module("app.client.hook")  # installs the hooks

_others = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]
_spec = PathFinder.find_spec("sitecustomize", _others)
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
