"""app.upstreams.imports: what a release module imports at load, from its code, mapped to
the release's requirements; checked on small releases and wheels written here (no network)."""

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from app.upstreams import imports


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")


def test_load_imports_follows_the_release_and_skips_what_does_not_run(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "demo/__init__.py": "import top_only\n",
            "demo/sub/__init__.py": "import sub_init_dep\n",
            "demo/sub/target.py": """\
                import os
                from typing import TYPE_CHECKING
                import demo_zmq.sugar
                from ..helpers import VALUE
                from . import sibling
                if TYPE_CHECKING:
                    import typing_only
                if TYPE_CHECKING:
                    import lazy_dep
                else:
                    lazy_dep = LazyLoader("lazy_dep")
                if _is_cuda:
                    import gpu_kernel_dep
                try:
                    import optional_dep
                except ImportError:
                    import fallback_dep
                class Pool:
                    import class_body_dep
                def later():
                    import called_only
            """,
            "demo/helpers.py": "from demo_yaml import load\nVALUE = 1\n",
            "demo/sub/sibling.py": "import sibling_dep\n",
        },
    )
    found = imports.load_imports(tmp_path, "demo.sub.target")
    assert found == {
        "sub_init_dep": "demo.sub",
        "demo_zmq": "demo.sub.target",
        "lazy_dep": "demo.sub.target",
        "fallback_dep": "demo.sub.target",
        "class_body_dep": "demo.sub.target",
        "demo_yaml": "demo.helpers",
        "sibling_dep": "demo.sub.sibling",
    }
    assert "top_only" in imports.load_imports(tmp_path, "demo.sub.target", top_init=True)


def test_a_name_of_the_top_package_runs_its_init(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "demo/__init__.py": "import top_dep\nVERSION = 1\n",
            "demo/target.py": "from demo import VERSION\n",
        },
    )
    assert imports.load_imports(tmp_path, "demo.target") == {"top_dep": "demo"}


def wheel(folder: Path, name: str, version: str, tops: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for top in tops:
            archive.writestr(f"{top}/__init__.py", "")
        archive.writestr(f"{name}-{version}.dist-info/METADATA", f"Name: {name}\n")


def test_imports_map_to_the_release_requirements(tmp_path: Path) -> None:
    """By name, by the files of a requirement's wheel whose name suggests the import, by
    what the requirements it imports require (their metadata, kept from an earlier look at
    the index); what this interpreter has needs nothing; the rest is named as missing."""
    folder = tmp_path / "wheels"
    wheel(folder, "pyzmqish", "26.0", ["zmqish"])
    wheel(folder, "otherwise", "1.0", ["otherwise"])
    known = {
        "yamlish>=6": {"name": "yamlish"},
        "pyzmqish>=25": {"name": "pyzmqish"},
        "jinja2": {
            "name": "jinja2",
            "requires_dist": ['tritonish~=3.8; python_version >= "3"', 'noextra; extra == "x"'],
        },
        "tritonish~=3.8": {"name": "tritonish"},
    }
    (folder / "metadata.json").write_text(json.dumps(known), encoding="utf-8")
    requirements = imports.base_requirements(
        [
            "yamlish>=6",
            "pyzmqish>=25",
            "otherwise",
            "jinja2",
            'gpu-only; platform_machine == "errkb"',
            'extra-only; extra == "serve"',
        ]
    )
    assert set(requirements) == {"yamlish", "pyzmqish", "otherwise", "jinja2"}
    needs = imports.requirement_specs(
        {
            "yamlish": "demo.a",
            "zmqish": "demo.b",
            "jinja2": "demo.c",
            "tritonish": "demo.c",
            "nowhere": "demo.d",
        },
        requirements,
        imports.TopLevels(folder),
    )
    assert needs.specs == {"yamlish>=6", "pyzmqish>=25", "tritonish~=3.8"}
    assert needs.missing == {"nowhere": "demo.d"}
    assert needs.accelerator == {}


def test_what_serves_only_an_accelerator_is_known_from_its_metadata() -> None:
    """By its classifier, by the name of a CUDA library or of one of the few whose metadata
    says nothing (flashinfer-python), or by a requirement of it on this platform that is one
    of those; a requirement only another platform or an extra asks for does not count, and
    triton, which imports on CPU, is none."""
    assert imports.accelerator_only(
        {"name": "sgl-deep-gemm", "classifier": ["Environment :: GPU :: NVIDIA CUDA"]}
    )
    assert imports.accelerator_only({"name": "nvidia-cutlass-dsl"})
    assert imports.accelerator_only({"name": "flashinfer-python"})
    assert not imports.accelerator_only({"name": "triton"})
    assert imports.accelerator_only(
        {"name": "quack-kernels", "requires_dist": ["nvidia-cutlass-dsl>=4.7", "einops"]}
    )
    assert not imports.accelerator_only(
        {
            "name": "xgrammarish",
            "classifier": ["Environment :: Console"],
            "requires_dist": [
                'nvidia-ml-py; platform_machine == "errkb"',
                'cuda-python; extra == "cuda"',
                "pydantic",
            ],
        }
    )
    assert not imports.accelerator_only({})


@pytest.mark.network
def test_the_index_torchaudio_fails_to_load_beside_the_cpu_torch_so_it_stays_out(
    tmp_path: Path,
) -> None:
    """vLLM 0.33.0 pins torchaudio 2.11.0; the index's Linux wheel links torch's CUDA libraries,
    and transformers imports it wherever it is installed: every vLLM module failed to load."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary=:all:"]
    target = ["--disable-pip-version-check", "--target", str(tmp_path)]
    subprocess.run([*pip, *target, "torchaudio==2.11.0"], check=True, timeout=600)
    load = f"import sys; sys.path.append({str(tmp_path)!r}); import torchaudio"
    loaded = subprocess.run(
        [sys.executable, "-c", load], capture_output=True, text=True, timeout=300, check=False
    )
    assert loaded.returncode != 0
    assert "libc10_cuda.so" in loaded.stderr
    assert imports.accelerator_only({"name": "torchaudio"})
    assert imports.accelerator_only({"name": "torchcodec"})  # libnvrtc.so.13, SGLang 0.5.23


def test_a_requirement_that_serves_only_an_accelerator_stays_out(tmp_path: Path) -> None:
    """Its import is named with it and why, not installed, and its wheel is never read (none
    is here: reading it would download it); the CPU requirement beside it is taken."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    known = {
        "kernelish==0.4": {
            "name": "kernelish",
            "classifier": ["Environment :: GPU :: NVIDIA CUDA"],
        },
        "attnish-python==0.7": {"name": "attnish-python", "requires_dist": ["cuda-python"]},
        "yamlish>=6": {"name": "yamlish"},
    }
    (folder / "metadata.json").write_text(json.dumps(known), encoding="utf-8")
    requirements = imports.base_requirements(known)
    needs = imports.requirement_specs(
        {"kernelish": "demo.ops", "attnish": "demo.attention", "yamlish": "demo.a"},
        requirements,
        imports.TopLevels(folder),
    )
    assert needs.specs == {"yamlish>=6"}
    assert needs.missing == {}
    assert set(needs.accelerator) == {"kernelish", "attnish"}
    assert "Environment :: GPU" in needs.accelerator["kernelish"]
    assert "cuda-python" in needs.accelerator["attnish"]
    assert not list(folder.glob("*.whl"))
