"""Code context of a raise site: callers, the handlers around them, the other
sites of the same message, on a small release and on the real vLLM seed site."""

from pathlib import Path
from textwrap import dedent

from app.harvest import harvest_tree

POOL = """
class PoolError(RuntimeError):
    pass


class Pool:
    def free(self, buffers):
        \"\"\"Return buffers to the pool.\"\"\"
        if self.count < len(buffers):
            raise PoolError("freed more buffers than allocated")
        self.count -= len(buffers)

    def drain(self):
        self.free(self.all)  # same file: listed first
"""
USER = """
from pool import Pool, PoolError


def release(pool, buffers):
    try:
        pool.free(buffers)
    except RuntimeError:
        log("double free")


def careless(pool):
    pool.free([])


def unrelated(other):
    try:
        other.free()
    except KeyError:
        pass


def free_buffers(x):  # a longer name that contains the callee's: not a call of it
    return x


def twin():
    raise PoolError("freed more buffers than allocated")
"""


def _context(tmp_path: Path) -> dict:
    for name, text in {"pool.py": POOL, "user.py": USER}.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
    result = harvest_tree(
        tmp_path,
        repo="example/pkg",
        ref="v1",
        analyzed_at="2026-12-01T00:00:00.000Z",
        package_dir="pkg",
    )
    [draft] = [d for d in result.drafts if d.record["filePath"] == "pkg/pool.py"]
    return draft.context


def test_callers_handlers_and_the_same_message_elsewhere(tmp_path: Path) -> None:
    context = _context(tmp_path)
    assert (context["function"], context["className"]) == ("free", "Pool")
    assert context["docstring"] == "Return buffers to the pool."
    assert context["guard"] == "self.count < len(buffers)"
    callers = [(c["filePath"], c["lineNumber"], c["function"]) for c in context["callers"]]
    assert callers == [
        ("pkg/pool.py", 14, "drain"),
        ("pkg/user.py", 7, "release"),
        ("pkg/user.py", 13, "careless"),
        ("pkg/user.py", 18, "unrelated"),
    ]
    assert context["callers"][0]["githubUrl"] == (
        "https://github.com/example/pkg/blob/v1/pkg/pool.py#L14"
    )
    # RuntimeError catches PoolError (a subclass found in the release); KeyError does not.
    handlers = [(h["lineNumber"], h["catches"], h["callLine"]) for h in context["handlers"]]
    assert handlers == [(8, ["RuntimeError"], 7)]
    assert [(s["filePath"], s["function"]) for s in context["sameMessageAt"]] == [
        ("pkg/user.py", "twin")
    ]
