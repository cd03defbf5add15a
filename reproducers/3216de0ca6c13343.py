"""Reproducer for record 3216de0ca6c13343: "EngineCore encountered an issue. See stack trace
(above) for the root cause." (EngineDeadError).

When vLLM V1's engine-core process hits an unhandled error it sends the sentinel
`EngineCoreProc.ENGINE_CORE_DEAD` on its output socket and exits; the client's output thread
receives it and `BackgroundResources.validate_alive` marks the engine dead and raises
EngineDeadError, which every pending and later request then gets. The scenario uses a real
ZMQ PUSH/PULL pair over inproc, as the engine core and the client use over IPC: the trigger
is the engine core's dying message; the extra scenario is the next request of a client
whose engine is dead (`ensure_alive`). The fix that can be shown without a GPU is the state
the record's solutions restore: an engine core that is alive (after its root cause is fixed
and the server restarted) sends ordinary outputs, which pass the same check, and the client
stays alive.

Stubbed, because core_client imports the engine core, which imports the scheduler and the
structured-output backends (xgrammar, a compiled package not in the release's CPU
requirements): vllm.v1.request's Request, RequestStatus and StreamingUpdate,
vllm.v1.core.sched.scheduler's Scheduler and vllm.v1.structured_output's
StructuredOutputManager. The client side's classes run as released.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "3216de0ca6c13343"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.engine.core_client",
    classes=("BackgroundResources", "EngineCoreProc"),
    stubs={
        "vllm.v1.request": ("Request", "RequestStatus", "StreamingUpdate"),
        "vllm.v1.core.sched.scheduler": ("Scheduler",),
        "vllm.v1.structured_output": ("StructuredOutputManager",),
    },
    requirements=True,
)
DEVICES = ("cpu",)


def _receive(module: ModuleType, message: bytes) -> object:
    """The engine core sends `message`; the client's output thread checks what it received.
    Returns the client's resources."""
    import zmq

    context = zmq.Context()
    resources = module.BackgroundResources(ctx=context)
    address = f"inproc://errkb-{RECORD_ID}"
    try:
        with context.socket(zmq.PULL) as client, context.socket(zmq.PUSH) as engine:
            client.bind(address)
            engine.connect(address)
            engine.send(message)
            frames = client.recv_multipart(copy=False)
            resources.validate_alive(frames)
    finally:
        context.term()
    return resources


def trigger(module: ModuleType, _device: str) -> None:
    """The engine core's last message before it exits."""
    _receive(module, module.EngineCoreProc.ENGINE_CORE_DEAD)


def trigger_next_request(module: ModuleType, _device: str) -> None:
    """A new request to a client whose engine core died."""
    import zmq

    resources = module.BackgroundResources(ctx=zmq.Context.instance())
    resources.engine_dead = True  # what validate_alive set when the sentinel arrived
    client = module.MPClient.__new__(module.MPClient)
    client.resources = resources
    client.ensure_alive()


def fix(module: ModuleType, _device: str) -> dict:
    """A live engine core's outputs pass the same check."""
    resources = _receive(module, b"outputs of a model step")
    require(not resources.engine_dead, "the client marked a live engine dead")
    return {"engine_dead": resources.engine_dead}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"next_request": trigger_next_request},
        )
    )
