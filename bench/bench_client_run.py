"""Benchmark: what `errkb run` costs a command's output.

Run by hand:

    .venv/bin/python bench/bench_client_run.py [--megabytes 50] [--runs 3]

A Python command writes that many megabytes of 80-character log lines (vLLM's INFO prefix,
no error) to stdout, in 64 KiB writes; it runs alone and under `errkb run` (no server is
asked: there is no error), each with stdout to /dev/null. Prints the best wall time of each,
and of `errkb run`'s own loop in this process (app.client.run.run_command, without the
CLI's start-up), and the throughput under it.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ERRKB = [sys.executable, "-c", "from app.cli.commands import main; main()"]
LINE = b"INFO 11-30 10:00:01 [core.py:75] step 1234 tokens 4096 throughput 123.4 tok/s ok\n"
WRITER = """
import os, sys
line = {line!r}
block = line * (65536 // len(line))
for _ in range({blocks}):
    os.write(1, block)
"""


def _best(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return min(times)


def _in_process(command: list[str], runs: int) -> float:
    sys.path.insert(0, str(ROOT))
    from app.client.run import run_command

    def no_source() -> None:
        raise AssertionError("a log with no error asks nobody")

    times = []
    null = os.open(os.devnull, os.O_WRONLY)
    for _ in range(runs):
        start = time.perf_counter()
        assert run_command(command, no_source, explain_wait_s=30.0, out_fd=null) == 0
        times.append(time.perf_counter() - start)
    os.close(null)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    blocks = args.megabytes * 1024 * 1024 // 65536
    writer = [sys.executable, "-c", WRITER.format(line=LINE, blocks=blocks)]
    alone = _best(writer, args.runs)
    startup = _best([*ERRKB, "run", "--", sys.executable, "-c", "pass"], args.runs)
    wrapped = _best([*ERRKB, "run", "--", *writer], args.runs)
    loop = _in_process(writer, args.runs)
    megabytes = blocks * 65536 / 1024 / 1024
    print(f"{megabytes:.0f} MB of log lines: alone {alone:.2f} s, under errkb run {wrapped:.2f} s")
    print(f"errkb run of an empty command: {startup:.2f} s (the CLI's start)")
    print(f"run_command in process: {loop:.2f} s, {megabytes / loop:.0f} MB/s")


if __name__ == "__main__":
    main()
