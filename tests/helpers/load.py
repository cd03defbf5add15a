"""A small HTTP/1.1 load generator for benchmarks and load tests: keep-alive connections.

Python threads with an HTTP client library spend more CPU per request than the server does
on a cheap one (GET by id), and on a 2-core machine the client's CPU is the servers' loss.
This sends pre-built requests over raw sockets and reads each reply by its Content-Length:
about 30 us of CPU a request. Connection n goes to target n modulo the number of targets,
as a load balancer spreads connections over replicas. It also streams giant request headers,
as a hostile client does.
"""

import asyncio
import resource
import select
import socket
import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What one level of load gave: requests done, throughput, latencies, client CPU."""

    requests: int
    rps: float
    median_ms: float
    p99_ms: float
    client_cpu_s: float
    wall_s: float


def get(path: str) -> bytes:
    """A keep-alive GET request."""
    return f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()


def post_json(path: str, body: bytes) -> bytes:
    """A keep-alive POST request with a JSON body."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _connection(
    target: tuple[str, int], requests: list[bytes], start: int, step: int, stop_at: float
) -> list[float]:
    reader, writer = await asyncio.open_connection(*target)
    latencies = []
    try:
        for request in requests[start::step]:
            if time.monotonic() > stop_at:
                break
            began = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head[9:12]
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - began)
            if status != b"200":
                raise RuntimeError(f"status {status.decode()} for {request[:60]!r}")
    finally:
        writer.close()
    return latencies


def drive(
    targets: list[tuple[str, int]], requests: list[bytes], concurrency: int, seconds: float
) -> LoadResult:
    """Send `requests` (each once, until `seconds` pass) over `concurrency` connections."""

    async def run() -> list[list[float]]:
        stop_at = time.monotonic() + seconds
        return await asyncio.gather(
            *(
                _connection(targets[n % len(targets)], requests, n, concurrency, stop_at)
                for n in range(concurrency)
            )
        )

    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    latencies = sorted(value for own in asyncio.run(run()) for value in own)
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return LoadResult(
        requests=len(latencies),
        rps=len(latencies) / wall,
        median_ms=statistics.median(latencies) * 1000,
        p99_ms=latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000,
        client_cpu_s=cpu,
        wall_s=wall,
    )


GIANT_START = b"GET / HTTP/1.1\r\nHost: x\r\nX: "
GIANT_CHUNK = b"a" * 65536
GIANT_BYTES = 70_000_000


def stream_giant_headers(target: tuple[str, int], seconds: float) -> list[str]:
    """Connections streaming a header that never ends (64 KiB after 64 KiB, up to GIANT_BYTES
    each), one after the other for `seconds`: the first line of each answer, or how the
    connection ended."""
    answers = []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        with socket.create_connection(target) as sock:
            sock.settimeout(seconds + 10)
            sent, answer = 0, "no answer"
            try:
                sock.sendall(GIANT_START)
                while sent < GIANT_BYTES and time.monotonic() < stop:
                    if select.select([sock], [], [], 0)[0]:
                        break  # the server answered: read it
                    sock.sendall(GIANT_CHUNK)
                    sent += len(GIANT_CHUNK)
                answer = sock.recv(200).split(b"\r\n", 1)[0].decode() or "closed"
            except OSError as error:
                answer = type(error).__name__
            answers.append(answer)
    return answers
