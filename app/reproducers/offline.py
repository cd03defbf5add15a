"""Run a bundle on a GPU machine without network, with nothing of errkb's installed:
`python3 -m app.reproducers.offline BUNDLE [--out FILE] [errkb verify options]`.

Such a machine has Python and its own torch, not errkb's packages, so this first step uses
the standard library only: it unpacks the bundle's archive beside it (once: its `site/`
holds errkb's packages, installed from wheels for that machine's Python), then hands over to
`errkb verify --from-bundle BUNDLE/unpacked --device cuda --torch installed` in a Python
whose path starts with that `site/` and the working tree. Options given after the bundle go
to that command (`--out FILE` for the run file to bring back, `--device cpu`).
"""

import os
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the working tree: app/ is one of its folders
# A bundle's layout, shared with app/reproducers/bundle.py, which makes it.
MANIFEST = "manifest.json"
ARCHIVE = "bundle.tar.xz"  # the tree: site/, cache/, generated/ and the manifest again
TREE = "unpacked"  # where the archive is unpacked, beside it
SITE = "site"  # errkb's and the harness's own packages, installed from their wheels
DONE = ".unpacked"
DEFAULTS = (("--device", "cuda"), ("--torch", "installed"))
ERRKB = "import sys; from app.cli.commands import main; sys.argv[0] = 'errkb'; main()"


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    bundle = Path(argv[0]).resolve()
    if not (bundle / MANIFEST).is_file():
        print(f"error: {bundle} is not a bundle (no {MANIFEST})", file=sys.stderr)
        return 2
    tree = bundle / TREE
    if not (tree / DONE).is_file():
        with tarfile.open(bundle / ARCHIVE, "r:xz") as archive:
            archive.extractall(tree, filter="data")
        (tree / DONE).write_text("unpacked\n", encoding="utf-8")
        print(f"unpacked {bundle / ARCHIVE} into {tree}", file=sys.stderr, flush=True)
    given = argv[1:]
    options = [*given, *(item for pair in DEFAULTS if pair[0] not in given for item in pair)]
    path = os.pathsep.join(
        part for part in (str(tree / SITE), str(ROOT), os.environ.get("PYTHONPATH")) if part
    )
    command = [sys.executable, "-c", ERRKB, "verify", "--from-bundle", str(tree), *options]
    os.execve(sys.executable, command, os.environ | {"PYTHONPATH": path})
    return 0  # not reached: the process is replaced


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
