"""Keep Python's cyclic garbage collector from stalling every request.

A full collection walks every container object the process holds: after start-up the imported
libraries and the match index, and a hostile paste of many error lines adds as many again while
it is parsed. Each full collection holds the GIL meanwhile, and /healthz waits behind it
(`bench/bench_hostile.py --sections healthz`; docs/benchmarks.md, "Hostile input and
hardening"). Freezing what start-up built takes it out of every later collection (it is never
garbage while the process serves), and a larger young generation lets one paste's short-lived
objects die by reference counting before a collection has to look at them.
"""

import gc

YOUNG_GENERATION_THRESHOLD = 20_000
"""Allocations between two young collections (Python's default: 700)."""


def settle() -> None:
    """Collect once, freeze the survivors, and collect young objects less often."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)
