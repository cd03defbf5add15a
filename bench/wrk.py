"""`wrk` (a C load tool, Debian's package `wrk`) as the benchmarks' load tool where it is
installed: on a 2-core machine the Python load tool (tests/helpers/load.py) takes a core's
share from the server it measures, and wrk takes a fraction of that.

A request given as the raw bytes tests/helpers/load.py sends (method, path, headers, body)
becomes a Lua script for wrk; its report is read back into the same LoadResult.
"""

import re
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.helpers.load import LoadResult

TIMEOUT_S = 30  # wrk's own is 2 s: a slow answer on a busy machine is a latency, not a failure
_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
_PERCENTILE = re.compile(r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", re.MULTILINE)
_DONE = re.compile(r"(\d+) requests in ([\d.]+)(us|ms|s|m)")
_FAILED = re.compile(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)")


def available() -> bool:
    """Whether wrk is on the PATH."""
    return shutil.which("wrk") is not None


FRESH = "FRESHREQUESTNUMBER"
"""Where a request's body holds this word, each request sends it with the word replaced by
a number of its own: every request is a new paste, which no reply cache has seen."""


def lua_script(request: bytes | Sequence[bytes]) -> str:
    """A wrk script sending this raw HTTP/1.1 request (its Host and Content-Length are
    wrk's own to set); a body holding FRESH is made anew for each request. Several requests
    (one method, path and headers; their bodies differ) are sent in turn, one after the
    other, from the first again after the last."""
    several = [request] if isinstance(request, bytes) else list(request)
    head, _, body = several[0].partition(b"\r\n\r\n")
    request_line, *lines = head.decode().split("\r\n")
    method, path, _ = request_line.split(" ")
    script = [f'wrk.method = "{method}"', f"wrk.path = {_lua_string(path)}"]
    for line in lines:
        name, _, value = line.partition(": ")
        if name.lower() not in ("host", "content-length"):
            script.append(f"wrk.headers[ {_lua_string(name)} ] = {_lua_string(value)}")
    bodies = [each.partition(b"\r\n\r\n")[2].decode() for each in several]
    if len(bodies) == 1 and FRESH not in body.decode():
        if body:
            script.append(f"wrk.body = {_lua_string(body.decode())}")
        return "\n".join(script) + "\n"
    script.append("bodies = {" + ", ".join(_lua_string(each) for each in bodies) + "}")
    script += [
        "counter = 0",
        "request = function()",
        "  counter = counter + 1",
        "  local body = bodies[(counter - 1) % #bodies + 1]",
        f'  body = string.gsub(body, "{FRESH}", tostring(counter))',
        "  return wrk.format(nil, nil, nil, body)",
        "end",
    ]
    return "\n".join(script) + "\n"


def _lua_string(text: str) -> str:
    """A Lua long string holding `text` as it is (no escapes to get wrong); Lua drops the
    newline right after the opening bracket, so one is put there for it to drop."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[\n{text}]{'=' * level}]"


def drive(
    port: int, request: bytes | Sequence[bytes], connections: int, seconds: float
) -> LoadResult:
    """`connections` keep-alive connections sending `request` (or each of several in turn,
    lua_script) for `seconds` from one wrk thread; raises RuntimeError when any answer was
    not 2xx/3xx or a socket failed."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "request.lua"
        script.write_text(lua_script(request))
        command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
        command += ["--timeout", f"{TIMEOUT_S}s"]
        command += ["-s", str(script), f"http://127.0.0.1:{port}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        report = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    failed = [m.group(0) for m in _FAILED.finditer(report)]
    if failed:
        raise RuntimeError("; ".join(failed))
    percentiles = {p: float(v) * _UNITS_MS[u] for p, v, u in _PERCENTILE.findall(report)}
    done = _DONE.search(report)
    if done is None or set(percentiles) != {"50", "99"}:
        raise RuntimeError(f"wrk's report was not understood: {report}")
    requests = int(done.group(1))
    elapsed_s = float(done.group(2)) * _UNITS_MS[done.group(3)] / 1000
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return LoadResult(
        requests=requests,
        rps=requests / elapsed_s,
        median_ms=percentiles["50"],
        p99_ms=percentiles["99"],
        client_cpu_s=cpu,
        wall_s=wall,
    )
