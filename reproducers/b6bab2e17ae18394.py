"""Reproducer for record b6bab2e17ae18394: "Not enough space in the data buffer, ...".

vLLM's SingleWriterShmObjectStorage keeps every object in its shared-memory ring buffer
until each reader has consumed it; puts that readers never consume fill the ring, and put()
raises even after its own free_unused() retry. The fix lets the reader consume through
get(), reclaims the space with free_unused() and puts again.

The storage takes its serializer as a parameter (serde_class); vLLM's default MsgpackSerde
imports the multimodal stack (PIL and more), so a pickle serde built on the module's own
ObjectSerde stands in. The ring buffer and the storage run unmodified.
"""

import multiprocessing
import os
import pickle
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "b6bab2e17ae18394"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.distributed.device_communicators.shm_object_storage",
    classes=("SingleWriterShmRingBuffer", "SingleWriterShmObjectStorage"),
)
DEVICES = ("cpu",)
PAYLOAD = bytes(range(200))
CAPACITY = 4  # objects of PAYLOAD's size that fill the ring exactly
RING_HEADER_BYTES = 8  # the ring's per-chunk id and size words
FLAG_BYTES = 4  # the storage's per-object in-use flag
READER_WAIT_S = 30.0


def _serde(module: ModuleType) -> type:
    class PickleSerde(module.ObjectSerde):
        """Pickle with no metadata: the object's bytes fill the chunk after its flag."""

        def serialize(self, value: object) -> tuple[bytes, int, bytes, int]:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            return data, len(data), b"", 0

        def deserialize(self, data: memoryview) -> object:
            return pickle.loads(data)

    return PickleSerde


@contextmanager
def _storage(module: ModuleType) -> Iterator[tuple[object, object]]:
    """A writer storage and one reader storage on a fresh ring, unlinked from /dev/shm after."""
    serde = _serde(module)
    object_bytes = FLAG_BYTES + len(serde().serialize(PAYLOAD)[0])
    size = CAPACITY * (RING_HEADER_BYTES + object_bytes)
    name = f"errkb-{RECORD_ID}-{os.getpid()}"
    ring = module.SingleWriterShmRingBuffer(size, name=name, create=True)
    writer = module.SingleWriterShmObjectStorage(object_bytes, 1, ring, serde)
    try:
        reader = module.SingleWriterShmObjectStorage(
            object_bytes,
            1,
            module.SingleWriterShmRingBuffer(size, name=name),
            serde,
            reader_lock=multiprocessing.Lock(),
        )
        try:
            yield writer, reader
        finally:
            reader.close()
    finally:
        writer.close()  # the writer unlinks the segment


def _fill(writer: object) -> list[str]:
    keys = [f"item-{index}" for index in range(CAPACITY)]
    for key in keys:
        writer.put(key, PAYLOAD)
    return keys


def _consume(writer: object, reader: object, key: str) -> object:
    """A reader's get() with the handle the writer signed; it marks the object consumed."""
    address, monotonic_id = writer.key_index[key]
    return reader.get(address, monotonic_id, writer.get_signature(key), key)


def trigger(module: ModuleType, _device: str) -> None:
    """Puts that no reader consumes, until the ring is full."""
    with _storage(module) as (writer, _reader):
        _fill(writer)
        writer.put("one-more", PAYLOAD)


def trigger_reader_killed(module: ModuleType, _device: str) -> None:
    """A reader process attaches and is killed before it consumes (releases) anything."""
    with _storage(module) as (writer, _reader):
        _fill(writer)
        context = multiprocessing.get_context("fork")
        attached = context.Event()
        size, name = writer.ring_buffer.handle()

        def attach_and_wait() -> None:
            module.SingleWriterShmRingBuffer(size, name=name)
            attached.set()
            time.sleep(READER_WAIT_S)

        reader = context.Process(target=attach_and_wait, daemon=True)
        reader.start()
        in_time = attached.wait(READER_WAIT_S)
        reader.kill()
        reader.join()
        if not in_time:
            raise RuntimeError("the reader process never attached to the ring")
        writer.put("one-more", PAYLOAD)


def fix(module: ModuleType, _device: str) -> dict:
    """The reader consumes, free_unused() reclaims the space, and the put succeeds."""
    with _storage(module) as (writer, reader):
        keys = _fill(writer)
        require(
            all(_consume(writer, reader, key) == PAYLOAD for key in keys),
            "a reader read back a different object",
        )
        ring = writer.ring_buffer
        occupied_before = ring.data_buffer_end - ring.data_buffer_start
        writer.free_unused()
        occupied_after = ring.data_buffer_end - ring.data_buffer_start
        freed = [key for key in keys if not writer.is_cached(key)]
        writer.put("one-more", PAYLOAD)
        value = _consume(writer, reader, "one-more")
        require(
            occupied_after < occupied_before,
            f"free_unused() reclaimed nothing ({occupied_after} bytes still occupied)",
        )
        require(bool(freed), "free_unused() dropped no consumed key from the index")
        require(value == PAYLOAD, "the object put after free_unused() reads back wrong")
        return {
            "occupied_bytes_before": occupied_before,
            "occupied_bytes_after_free": occupied_after,
            "data_buffer_size": ring.data_buffer_size,
            "freed_keys": freed,
            "monotonic_id_start": ring.monotonic_id_start,
        }


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"reader_killed": trigger_reader_killed},
        )
    )
