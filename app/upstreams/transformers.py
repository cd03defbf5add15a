"""Hugging Face transformers (huggingface/transformers): the model, tokenizer and config
loading that vLLM and SGLang call, and so the source of many errors people paste with them.
Harvested in the background once the server is ready; its package lives under src/."""

from app.upstreams.base import UpstreamProject

PROJECT = UpstreamProject(
    package="transformers",
    repo="huggingface/transformers",
    distribution="transformers",
    path_prefix="src/",
    older_releases=("transformers==5.24.0",),
)
