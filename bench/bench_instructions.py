"""Instructions a match takes, counted by valgrind's callgrind: the same count for the same code,
store and pastes however busy the machine is, where its seconds come and go by half.

Run by hand (valgrind and callgrind_control from Debian's valgrind package):

    .venv/bin/python bench/bench_instructions.py --database PATH [--pastes real|fresh]
        [--baseline ROOT]

For each code (this checkout, and `--baseline ROOT`'s), a process of its own loads the app on
the store at PATH under callgrind with instrumentation off (loading the index is not
counted), matches every paste twice to warm what is kept per dataset version, then counts one
more round: `match_text` and the reply's JSON of each paste, as a request's handler does. The
version read is shared as under load (a request that arrived before another's read uses it,
app.records.dataset_cache), so it is not counted per paste. `real`: the 329 pastes of
tests/fixtures/real_pastes; `fresh`: 200 of bench/bench_store.py's 5 KB paste, each with a
number of its own on its first line. Instructions are not time (a cache miss costs no
instruction), so a code that touches less memory may gain more than its count says.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRESH_PASTES = 200


def texts(kind: str) -> list[str]:
    """The pastes of one round."""
    sys.path.insert(1, str(ROOT))
    if kind == "real":
        from tests.helpers.real_pastes import load_cases

        return [case["paste"] for case in load_cases().values()]
    from bench.bench_store import pastes

    paste = pastes()["5 KB"].decode()
    return [f"request {number}\n{paste}" for number in range(FRESH_PASTES)]


def serve_rounds(database: str, kind: str) -> None:
    """The counted process: warm up, say "ready", then one round per line read."""
    from sqlmodel import Session

    from app.config import Settings
    from app.main import create_app
    from app.matching.service import match_text
    from app.records import dataset_cache

    app = create_app(Settings(database_url=f"sqlite:///{database}", harvest_on_start=False))
    engine, matcher = app.state.services.engine, app.state.services.matcher
    dataset_cache.ARRIVED_NS.set(0)  # every request arrived before the last version read
    pastes = texts(kind)

    def one_round() -> None:
        for paste in pastes:
            with Session(engine) as session:
                match_text(matcher, session, paste).model_dump_json(by_alias=True)

    one_round()
    one_round()
    print("ready", flush=True)
    for _ in sys.stdin:
        one_round()
        print("done", flush=True)


def count(code: Path, database: Path, kind: str) -> float:
    """Instructions a paste of one round, for the code at `code`."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
        command += [f"--callgrind-out-file={out}", sys.executable, __file__, "--serve"]
        command += ["--database", str(database), "--pastes", kind]
        process = subprocess.Popen(
            command,
            cwd=code,
            env=os.environ | {"PYTHONPATH": str(code)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdin
        assert process.stdout
        if process.stdout.readline().strip() != "ready":
            raise SystemExit(f"{code}: the counted process did not start")
        control = ["callgrind_control", "--instr"]
        subprocess.run([*control, "on", str(process.pid)], check=True, capture_output=True)
        process.stdin.write("go\n")
        process.stdin.flush()
        process.stdout.readline()
        subprocess.run([*control, "off", str(process.pid)], check=True, capture_output=True)
        process.stdin.close()
        process.wait()
        totals = [
            int(line.split()[1])
            for line in out.read_text().splitlines()
            if line.startswith(("totals:", "summary:"))
        ]
    return max(totals) / len(texts(kind))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--pastes", choices=["real", "fresh"], default="real")
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_rounds(str(args.database), args.pastes)
        return
    codes = {"this": ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    counted = {name: count(code, args.database, args.pastes) for name, code in codes.items()}
    print(f"\n| code | instructions a paste ({args.pastes}, {args.database.name}) |")
    print("|---|---|")
    for name, instructions in counted.items():
        print(f"| {name} | {instructions / 1e6:.3f} M |")
    if args.baseline:
        print(f"\nthis / baseline: {counted['this'] / counted['baseline']:.3f}")


if __name__ == "__main__":
    main()
