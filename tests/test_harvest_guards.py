"""A raise site's guard: the path of `if` tests inside its function, and the exceptions an
`except` around it translates."""

from textwrap import dedent

from app.harvest import extract_raises


def test_guard_is_the_path_of_if_tests_inside_the_function() -> None:
    """CopyBufferAllocator.free_buffer raises when the count is short."""
    sites = extract_raises(
        dedent(
            """
            class CopyBufferAllocator:
                def free_buffer(self, buffers):
                    \"\"\"Return buffers to the pool.

                    More text that is not the first paragraph.\"\"\"
                    if not buffers:
                        return
                    if self._inuse_count >= len(buffers):
                        self._inuse_count -= len(buffers)
                    else:
                        raise RuntimeError("Attempted to free more buffers than allocated")

            def pick(items, mode):
                for item in items:
                    if item.ok:
                        continue
                    if mode == "a" or mode == "b":
                        if item.size > 3:
                            raise ValueError("item too large")
                    elif mode is None:
                        raise ValueError("no mode")
                    raise ValueError("bad item")
                try:
                    load(items)
                except (KeyError, IndexError) as error:
                    raise LookupError("could not load the items") from error
            """
        )
    )
    assert [(s.guard, s.translates) for s in sites] == [
        ("self._inuse_count < len(buffers)", ()),
        ("(mode == 'a' or mode == 'b') and item.size > 3", ()),
        ("not (mode == 'a' or mode == 'b') and mode is None", ()),
        ("not item.ok", ()),
        (None, ("KeyError", "IndexError")),
    ]
    assert sites[0].docstring == "Return buffers to the pool."
    assert (sites[0].function, sites[0].class_name) == ("free_buffer", "CopyBufferAllocator")
