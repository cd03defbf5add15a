"""Reproducer for record 631d0b2ae7806e42: "Engine core initialization failed. See root cause
above. Failed core proc(s): {finished}".

`vllm serve` and `LLM(...)` start the engine core in a process of its own and wait for it in
`wait_for_engine_startup`: the front end polls a ZMQ ROUTER socket for the engine's HELLO and
READY messages and, on the same poller, the sentinels of the engine processes. The trigger
starts a real child process named `EngineCore_DP0`, as `CoreEngineProcManager` does, whose
start-up fails (it raises, printing the root cause, and exits with code 1) before it reports
ready: the front end sees its sentinel and raises with `{'EngineCore_DP0': 1}`. The fix is
the same launch once the root cause is gone: the child connects a DEALER socket with its
data-parallel rank as identity, sends HELLO, receives the handshake metadata and sends
READY, and `wait_for_engine_startup` returns with the engine marked ready.

The CoreEngineProcManager is made with `CoreEngineProcManager.__new__` and given only its
processes (state set directly, not through the constructor, which would start vLLM's real
engine core and load a model); `sentinels()` and `finished_procs()` run unmodified. The
parallel and cache configs are plain objects holding the three data-parallel settings the
handshake reads for one local engine.
"""

import multiprocessing
import sys
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "631d0b2ae7806e42"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.engine.utils",
    classes=("CoreEngine", "CoreEngineProcManager", "CoreEngineLaunch", "EngineZmqAddresses"),
    requirements=True,
)
DEVICES = ("cpu",)
ENGINE_NAME = "EngineCore_DP0"  # what CoreEngineProcManager names data-parallel rank 0
TIMEOUT_MS = 30_000


def _failing_engine(_address: str) -> None:
    """An engine core whose start-up fails: the root cause the message points above to."""
    raise ValueError("No available memory for the cache blocks.")


def _healthy_engine(address: str) -> None:
    """An engine core that starts: HELLO, the front end's metadata, then READY."""
    import msgspec
    import zmq

    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.IDENTITY, (0).to_bytes(2, "little"))
    socket.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
    socket.connect(address)
    hello = {"status": "HELLO", "local": True, "headless": False}
    socket.send(msgspec.msgpack.encode(hello))
    msgspec.msgpack.decode(socket.recv())  # EngineHandshakeMetadata: the queues to connect to
    socket.send(msgspec.msgpack.encode({**hello, "status": "READY"}))
    socket.setsockopt(zmq.LINGER, TIMEOUT_MS)
    socket.close()
    context.term()


def _start(module: ModuleType, engine: object) -> tuple[object, object]:
    """Launch one engine process and wait for it as the front end does."""
    import zmq

    context = zmq.Context()
    handshake = context.socket(zmq.ROUTER)
    with tempfile.TemporaryDirectory(prefix="errkb-engine-") as folder:
        address = f"ipc://{folder}/handshake"
        handshake.bind(address)
        process = multiprocessing.get_context("fork").Process(
            target=engine, args=(address,), name=ENGINE_NAME
        )
        process.start()
        manager = module.CoreEngineProcManager.__new__(module.CoreEngineProcManager)
        manager.processes = [process]
        addresses = module.EngineZmqAddresses(
            inputs=[f"ipc://{folder}/input"], outputs=[f"ipc://{folder}/output"]
        )
        launch = module.CoreEngineLaunch(
            engine_manager=manager, coordinator=None, addresses=addresses, tensor_queue=None
        )
        parallel = SimpleNamespace(
            data_parallel_size_local=1,
            data_parallel_hybrid_lb=False,
            data_parallel_external_lb=False,
        )
        core_engine = module.CoreEngine(index=0, local=True)
        try:
            module.wait_for_engine_startup(
                handshake, [core_engine], parallel, False, SimpleNamespace(), launch
            )
        finally:
            process.join(TIMEOUT_MS / 1000)
            handshake.close(linger=0)
            context.term()
    return core_engine, process


def trigger(module: ModuleType, _device: str) -> None:
    """The engine core process fails during start-up."""
    _start(module, _failing_engine)


def fix(module: ModuleType, _device: str) -> dict:
    """The same launch once the engine's own error is fixed: it reports ready."""
    core_engine, process = _start(module, _healthy_engine)
    state = core_engine.state
    require(state == module.CoreEngineState.READY, f"the engine is {state}")
    require(process.exitcode == 0, f"the engine process exited with {process.exitcode}")
    return {"engine": ENGINE_NAME, "state": state.name, "exitcode": process.exitcode}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
