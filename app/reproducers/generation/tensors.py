"""Tensors as candidate values: a guard that reads a tensor argument's shape, rank or dtype
(`if input.dim() != 4: raise ValueError(...)`, `x.dtype in (torch.half, torch.bfloat16)`)
is judged on small descriptions of tensors (a shape and a dtype), and the script builds the
tensor the description names (`torch.zeros((2, 3), dtype=torch.float32)`).

Nothing here imports torch: the description answers what a guard asks of a tensor (its
`shape`, `ndim`, `dim()`, `size(i)`, `numel()`, `dtype`, `device`, ...), the way torch's
tensor on the CPU would, and the run on the real release shows whether it does.
"""

import ast
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# torch's dtypes under every name torch binds them to, by their canonical name.
_DTYPE_NAMES: dict[str, str] = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "complex64": "complex64",
    "cfloat": "complex64",
    "complex128": "complex128",
    "cdouble": "complex128",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "short": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
_FLOATING = frozenset({"float32", "float64", "float16", "bfloat16"})
_COMPLEX = frozenset({"complex64", "complex128"})
_ITEM_SIZES = {"float64": 8, "complex64": 8, "complex128": 16, "int64": 8, "float32": 4, "int32": 4}

# What a guard may read of a tensor without running torch: attributes, and methods called
# with literal arguments.
ATTRIBUTES = frozenset(
    {"shape", "ndim", "dtype", "device", "is_cuda", "is_sparse", "is_meta", "requires_grad"}
)
METHODS = frozenset(
    {
        "dim",
        "ndimension",
        "size",
        "numel",
        "is_floating_point",
        "is_complex",
        "is_contiguous",
        "element_size",
    }
)
# What an `isinstance` test names the tensor class by.
TENSOR_CLASSES = frozenset({"torch.Tensor", "Tensor", "TensorLike", "TensorLikeType"})
# An annotation that names a tensor and nothing else (`Optional[Tensor]`, not `float | Tensor`).
_TENSOR_WORDS = frozenset(name.rpartition(".")[2] for name in TENSOR_CLASSES)
_OPTIONAL_WORDS = frozenset({"torch", "Optional", "None"})
# An argument the function reads like this, and has no annotation, is taken for a tensor.
_TENSOR_ONLY = frozenset(
    {"dim", "ndimension", "ndim", "numel", "is_floating_point", "is_contiguous"}
)


@dataclass(frozen=True, slots=True)
class Dtype:
    """A torch dtype by its canonical name (`torch.half` is `torch.float16`)."""

    name: str

    @property
    def is_floating_point(self) -> bool:
        return self.name in _FLOATING

    @property
    def is_complex(self) -> bool:
        return self.name in _COMPLEX

    def __repr__(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True, slots=True)
class Device:
    """The device of a candidate tensor: the scripts run on the CPU."""

    type: str = "cpu"
    index: None = None


@dataclass(frozen=True, slots=True)
class TensorValue:
    """A candidate tensor: zeros of this shape and dtype, on the CPU."""

    shape: tuple[int, ...]
    dtype: Dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def device(self) -> Device:
        return Device()

    is_cuda = False
    is_sparse = False
    is_meta = False
    requires_grad = False

    def dim(self) -> int:
        return len(self.shape)

    def ndimension(self) -> int:
        return len(self.shape)

    def size(self, index: int | None = None) -> tuple[int, ...] | int:
        return self.shape if index is None else self.shape[index]

    def numel(self) -> int:
        return math.prod(self.shape)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_contiguous(self) -> bool:
        return True

    def element_size(self) -> int:
        return _ITEM_SIZES.get(self.dtype.name, 2 if "16" in self.dtype.name else 1)

    def __repr__(self) -> str:
        return f"torch.zeros({self.shape!r}, dtype=torch.{self.dtype.name})"


# One object per dtype, as torch has: a guard may compare them with `is`.
_DTYPES = {name: Dtype(name) for name in set(_DTYPE_NAMES.values())}
ANY_TENSOR = TensorValue((2,), _DTYPES["float32"])  # an instance of the class, of any shape
ANY_DTYPE = _DTYPES["float32"]  # an instance of torch.dtype


def dtype_constant(node: ast.expr) -> Dtype | None:
    """`torch.float16`, `torch.half`: the dtype an expression names; None for anything else."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "torch"
        and node.attr in _DTYPE_NAMES
    ):
        return _DTYPES[_DTYPE_NAMES[node.attr]]
    return None


def tensor_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters that are tensors: annotated as one and nothing else (`Tensor`,
    `torch.Tensor`, `TensorLikeType`, `Optional[Tensor]`), or not annotated and read the way
    only a tensor is (`x.dim()`, `x.ndim`, `x.numel()`)."""
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    annotated = {
        arg.arg
        for arg in every
        if arg.annotation is not None
        and _TENSOR_WORDS & (words := set(re.findall(r"\w+", ast.unparse(arg.annotation))))
        and words <= _TENSOR_WORDS | _OPTIONAL_WORDS
    }
    unannotated = {arg.arg for arg in every if arg.annotation is None}
    read = {
        child.value.id
        for child in ast.walk(node)
        if isinstance(child, ast.Attribute)
        and isinstance(child.value, ast.Name)
        and child.value.id in unannotated
        and child.attr in _TENSOR_ONLY
    }
    return frozenset(annotated | read)


def read(value: Any, attributes: Sequence[str]) -> Any:
    """What a chain of attributes reads from a candidate tensor (`x.dtype.is_floating_point`,
    `x.device.type`)."""
    for attribute in attributes:
        if not isinstance(value, TensorValue | Dtype | Device) or attribute.startswith("_"):
            raise AttributeError(attribute)
        value = getattr(value, attribute)
    return value


def candidates(tests: Iterable[ast.expr], optional: bool, class_checked: bool) -> list[Any]:
    """Tensors to try: ranks 0 to 4 of float32, then the dtypes the tests name and the common
    ones at rank 1, then shapes whose sizes are the tests' small whole numbers; None first
    when the argument may be None, and a plain value when a test checks its class (`if not
    isinstance(a, TensorLike): raise ...` wants one that is no tensor)."""
    dtypes = [_DTYPES["float32"]]
    sizes: list[int] = []
    for test in tests:
        for node in ast.walk(test):
            dtype = dtype_constant(node) if isinstance(node, ast.expr) else None
            if dtype is not None and dtype not in dtypes:
                dtypes.append(dtype)
            elif (
                isinstance(node, ast.Constant)
                and type(node.value) is int
                and 0 <= node.value <= 8
                and node.value not in sizes
            ):
                sizes.append(node.value)
    for name in ("int64", "bool", "float16", "float64", "complex64"):
        if _DTYPES[name] not in dtypes:
            dtypes.append(_DTYPES[name])
    float32 = dtypes[0]
    found: list[Any] = [None] if optional else []
    found += [TensorValue((2, 3, 4, 5)[:rank], float32) for rank in range(5)]
    found += [0] if class_checked else []
    found += [TensorValue((2,), dtype) for dtype in dtypes[1:]]
    for size in sizes:
        for shape in ((size,), (2, size), (size, size), (2, 3, size)):
            value = TensorValue(shape, float32)
            if value not in found:
                found.append(value)
    return found
