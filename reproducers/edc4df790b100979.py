"""Reproducer for record edc4df790b100979: "CUDA VMM pool has no occupied slice at control ...".

SGLang's CudaVmmMemoryPool releases a published slice on cancel_proxy(); a second cancel of
the same proxy finds no occupied chunk at its control offset and raises. The fix guards the
cancel with a released flag, after which the pool holds no occupied chunk and its free
chunks are merged back into one.

Needs CUDA: the pool's constructor maps real device memory through the CUDA driver
(cuda.bindings: cuMemCreate, cuMemMap, cuMemExportToShareableHandle) and creates
torch.cuda streams. The module imports schedule_batch and runtime_context (the serving
stack) for names the pool never uses; those are stubbed, and listed in the result.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "edc4df790b100979"
TARGET = Target(
    package="sglang",
    version="0.5.23",
    module="sglang.srt.utils.cuda_vmm_transport_utils",
    classes=("CudaVmmMemoryPool", "CudaVmmTensorTransportProxy"),
    stubs={
        "sglang.srt.managers.schedule_batch": (
            "Modality",
            "MultimodalDataItem",
            "MultimodalProcessorOutput",
        ),
        "sglang.srt.runtime_context": ("get_mm", "get_parallel", "get_serving"),
        "sglang.srt.utils": ("log_info_on_rank0",),
    },
)
DEVICES = ("cuda",)
POOL_BYTES = 64 << 20
RECYCLE_INTERVAL_S = 3600.0  # the recycler must not run during a check; shutdown wakes it


@contextmanager
def _pool(module: ModuleType) -> Iterator[object]:
    import torch

    pool = module.CudaVmmMemoryPool(
        POOL_BYTES,
        RECYCLE_INTERVAL_S,
        torch.cuda.current_device(),
        consumer_count=1,
        allow_posix_fallback=True,  # one machine: a POSIX FD handle when FABRIC is missing
    )
    try:
        yield pool
    finally:
        pool.shutdown()


def _publish(module: ModuleType, pool: object, count: int) -> list[object]:
    import torch

    proxies = [pool.wrap_tensor(torch.full((1024,), float(i), device="cuda")) for i in range(count)]
    require(
        all(isinstance(p, module.CudaVmmTensorTransportProxy) for p in proxies),
        "the pool had no free chunk for a 4 KiB tensor",
    )
    return proxies


def trigger(module: ModuleType, _device: str) -> None:
    """A failed dispatch cancels the proxy, then a retry path cancels it again."""
    with _pool(module) as pool:
        (proxy,) = _publish(module, pool, 1)
        pool.cancel_proxy(proxy)
        pool.cancel_proxy(proxy)


def _cancel_once(pool: object, proxy: object) -> None:
    """The record's exampleFix: the released flag makes a second cancel a no-op."""
    if getattr(proxy, "released", False):
        return
    pool.cancel_proxy(proxy)
    proxy.released = True


def fix(module: ModuleType, _device: str) -> dict:
    """Two slices, each cancelled by both paths through the guard."""
    with _pool(module) as pool:
        proxies = _publish(module, pool, 2)
        require(
            len(pool.occupied_chunks) == 2,
            f"{len(pool.occupied_chunks)} occupied chunks after two publishes, not 2",
        )
        for proxy in proxies + proxies:
            _cancel_once(pool, proxy)
        whole = [(0, pool.allocation_size)]
        chunks = [(chunk.start, chunk.end) for chunk in pool.available_chunks]
        require(not pool.occupied_chunks, f"occupied chunks remain: {pool.occupied_chunks}")
        require(chunks == whole, f"free chunks {chunks} are not merged into {whole}")
        return {
            "occupied_chunks": 0,
            "available_chunks": chunks,
            "allocation_size": pool.allocation_size,
            "control_offsets": [proxy.control_offset for proxy in proxies],
        }


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
