"""Benchmark of the endpoint store (docs/knowledge-graph.md, "An endpoint"): ``--queries``
(1,000) executions at ``sparql.concurrency`` ``--concurrency`` (16) through
:class:`~graphrag_eval.graph.endpoint.EndpointStore` against a local HTTP endpoint that
answers each query after ``--latency`` (20 ms).

The endpoint runs in another process (this script with ``--serve``): by default it answers
every query with the same SPARQL JSON results (10 rows); with ``--oxigraph`` it is a proxy in
front of the real Oxigraph server (``oxigraph serve-read-only`` beside the interpreter, over
the small graph of tests/graph/oxigraph_server.py), which executes each query.

The ideal is ``queries x latency / concurrency`` (1.25 s); the target is a median wall time
within 1.3 x of it. The table also gives the most requests the endpoint had in flight at once
(it must be the concurrency), and this process's CPU time per execution. An untimed round of
``concurrency`` queries opens the connections first. Exits 1 when the target is missed or an
execution fails.

Run from the repository root::

    .venv/bin/python benchmarks/bench_endpoint.py [--queries 1000] [--concurrency 16]
        [--latency 0.02] [--repeat 5] [--oxigraph] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.3
QUERY = "SELECT ?s ?label WHERE {{ ?s <http://www.w3.org/2000/01/rdf-schema#label> ?label }} # {n}"
FIXED_RESULTS = json.dumps(
    {
        "head": {"vars": ["s", "label"]},
        "results": {
            "bindings": [
                {
                    "s": {"type": "uri", "value": f"http://example.org/grid#s{n}"},
                    "label": {"type": "literal", "value": f"Substation {n}", "xml:lang": "en"},
                }
                for n in range(10)
            ]
        },
    }
).encode()


# ------------------------------------------------------------------------------------------
# The endpoint (another process)


class _Endpoint(asyncio.Protocol):
    """One connection to the benchmark's endpoint: HTTP/1.1 with keep-alive, each request
    answered after the latency (the fixed results, or the upstream's reply). A minimal server,
    so that its own CPU time does not count against the client on a 2-core machine."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.tasks: set[asyncio.Future[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            length = 0
            accept = "*/*"
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
                elif name.strip().lower() == "accept":
                    accept = value.strip()
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            task = asyncio.ensure_future(self.answer(head.split(" ", 2)[1], body, accept))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def answer(self, path: str, body: bytes, accept: str) -> None:
        state = self.state
        if path == "/stats":
            seen, state["max"] = state["max"], 0
            self.reply(json.dumps({"max_in_flight": seen}).encode(), "application/json")
            return
        state["in_flight"] += 1
        state["max"] = max(state["max"], state["in_flight"])
        try:
            await asyncio.sleep(state["latency"])
            if state["upstream"] is None:
                self.reply(FIXED_RESULTS, "application/sparql-results+json")
                return
            headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": accept}
            async with state["session"].post(state["upstream"], data=body, headers=headers) as up:
                self.reply(await up.read(), up.content_type, up.status)
        finally:
            state["in_flight"] -= 1

    def reply(self, content: bytes, content_type: str, status: int = 200) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        head = (
            f"HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(content)}\r\n\r\n"
        )
        self.transport.write(head.encode() + content)


async def serve(latency: float, upstream: str | None) -> None:
    """Answer SPARQL queries on 127.0.0.1 after ``latency`` (forwarded to ``upstream``, or
    the fixed results); print the port, then serve until stdin closes. ``GET /stats`` gives
    the most requests in flight at once since the last ``GET /stats``."""
    import aiohttp

    loop = asyncio.get_running_loop()
    session = aiohttp.ClientSession() if upstream else None
    state: dict[str, Any] = {
        "in_flight": 0,
        "max": 0,
        "latency": latency,
        "upstream": upstream,
        "session": session,
    }
    server = await loop.create_server(lambda: _Endpoint(state), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()
    if session is not None:
        await session.close()


# ------------------------------------------------------------------------------------------
# The client (this process)


async def one_round(store: Any, queries: int) -> tuple[float, float, int]:
    """Execute ``queries`` queries at once (the store limits them): wall time, CPU time,
    failures."""
    wall, cpu = time.perf_counter(), time.process_time()
    executions = await asyncio.gather(*(store.execute(QUERY.format(n=n)) for n in range(queries)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, sum(not execution.ok for execution in executions)


async def floor_round(url: str, queries: int, concurrency: int) -> float:
    """The same queries sent by a bare client (``concurrency`` keep-alive connections over
    raw sockets, each sending its share one after the other): the wall time this machine
    gives at best, at its load of the moment."""
    host, port = url.removeprefix("http://").split(":")
    body = urllib.parse.urlencode({"query": QUERY.format(n=0)}).encode()
    request = (
        b"POST /query HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )

    async def connection(count: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        for _ in range(count):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            json.loads(await reader.readexactly(length))
        writer.close()
        await writer.wait_closed()

    shares = [queries // concurrency + (n < queries % concurrency) for n in range(concurrency)]
    wall = time.perf_counter()
    await asyncio.gather(*(connection(share) for share in shares))
    return time.perf_counter() - wall


async def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    from graphrag_eval.config.sparql import SparqlConfig
    from graphrag_eval.graph.endpoint import open_endpoint

    store = open_endpoint(SparqlConfig(endpoint=url + "/query", concurrency=args.concurrency))
    stats_url = url + "/stats"
    walls: list[float] = []
    floors: list[float] = []
    cpus: list[float] = []
    failed = 0
    peaks: list[int] = []
    async with aiohttp.ClientSession() as session:
        try:
            await one_round(store, args.concurrency)  # opens the connections
            await session.get(stats_url)
            for _ in range(args.repeat):
                wall, cpu, failures = await one_round(store, args.queries)
                walls.append(wall)
                cpus.append(cpu)
                failed += failures
                async with session.get(stats_url) as reply:
                    peaks.append((await reply.json())["max_in_flight"])
                floors.append(await floor_round(url, args.queries, args.concurrency))
        finally:
            await store.aclose()
    ideal = args.queries * args.latency / args.concurrency
    median = statistics.median(walls)
    return {
        "queries": args.queries,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "endpoint": "oxigraph proxy" if args.oxigraph else "fixed results",
        "ideal_s": ideal,
        "wall_s": {"min": min(walls), "median": median, "max": max(walls)},
        "ratio_median": median / ideal,
        "floor_s": {"min": min(floors), "median": statistics.median(floors)},
        "ratio_to_floor": median / statistics.median(floors),
        "cpu_ms_per_execution": statistics.median(cpus) / args.queries * 1000,
        "max_in_flight": max(peaks),
        "failed": failed,
        "target_ratio": TARGET_RATIO,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
    }


def start_endpoint(
    args: argparse.Namespace, upstream: str | None
) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, __file__, "--serve", "--latency", str(args.latency)]
    if upstream is not None:
        command += ["--upstream", upstream]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    if not port:
        raise RuntimeError("the benchmark's endpoint did not start")
    return process, f"http://127.0.0.1:{port}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        oxigraph = None
        upstream = None
        if args.oxigraph:
            sys.path.insert(0, str(ROOT / "tests"))
            from graph.oxigraph_server import OxigraphServer

            oxigraph = OxigraphServer(Path(directory)).__enter__()
            upstream = oxigraph.query_url
        process, url = start_endpoint(args, upstream)
        try:
            return asyncio.run(measure(url, args))
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)
            if oxigraph is not None:
                oxigraph.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--oxigraph", action="store_true")
    parser.add_argument("--json", nargs="?", const="-", default=None)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--upstream", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.latency, args.upstream))
        return 0
    result = run(args)
    wall = result["wall_s"]
    print(
        f"{result['queries']} executions, concurrency {result['concurrency']}, "
        f"{result['latency_s'] * 1000:g} ms latency ({result['endpoint']}), {args.repeat} runs\n"
        f"| ideal | wall min / median / max | median / ideal | bare client median "
        f"(store / bare) | CPU per execution | most in flight | failed |\n"
        f"|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {result['ideal_s']:.3f} s | {wall['min']:.3f} / {wall['median']:.3f} / "
        f"{wall['max']:.3f} s | {result['ratio_median']:.2f} | "
        f"{result['floor_s']['median']:.3f} s ({result['ratio_to_floor']:.2f}) | "
        f"{result['cpu_ms_per_execution']:.2f} ms | {result['max_in_flight']} | "
        f"{result['failed']} |"
    )
    if args.json is not None:
        text = json.dumps(result, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    missed = result["ratio_median"] > TARGET_RATIO or result["failed"]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
