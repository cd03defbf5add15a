"""Triton (triton-lang/triton): the kernel language and compiler that vLLM, SGLang and
torch.compile run on GPUs; its Python package lives under python/. Harvested on demand
(`errkb harvest triton==VERSION`): it has no sdist, and its wheels carry the compiler."""

from app.upstreams.base import UpstreamProject

PROJECT = UpstreamProject(
    package="triton",
    repo="triton-lang/triton",
    distribution="triton",
    path_prefix="python/",
)
