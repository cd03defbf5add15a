"""The upstream projects, one module each: the registry every other part asks, and the
transformers module as the proof that adding an upstream is adding one module."""

import io
import tarfile
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version
from sqlmodel import Session

from app import upstreams
from app.config import PROJECT_ROOT, Settings
from app.matching.candidate import frame_repo, path_suffixes
from app.matching.logtext import clean_lines
from app.matching.matcher import Matcher
from app.matching.origin import log_repos
from app.matching.service import match_text
from app.matching.tracebacks.model import Frame
from app.records import service as records
from app.upstreams import SGLANG, TORCH, VLLM, distribution_metadata, release_cache, unpacking

TRANSFORMERS = "huggingface/transformers"
# A real paste (vLLM's chat endpoint on a base model without a chat template), the frames
# shortened to the two that matter and the message as transformers 5.24.0 raises it.
CHAT_TEMPLATE_PASTE = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/chat_utils.py", line 1409, in apply_hf_chat_template
    hf_chat_template = resolve_hf_chat_template(
  File "/usr/local/lib/python3.12/dist-packages/transformers/tokenization_utils_base.py", line 3384, in get_chat_template
    raise ValueError(
ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template argument was passed! For information about writing templates and setting the tokenizer.chat_template attribute, please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating
"""  # noqa: E501


def test_each_project_is_known_by_one_package_and_one_repository() -> None:
    packages = [project.package for project in upstreams.UPSTREAMS]
    repos = [project.repo for project in upstreams.UPSTREAMS]
    assert len(set(packages)) == len(packages) == len(set(repos))
    assert {VLLM, SGLANG, TORCH, TRANSFORMERS} <= set(repos)
    for project in upstreams.UPSTREAMS:
        assert all(
            release.startswith(f"{project.distribution}==")
            for release in [
                *project.older_releases,
                *([project.current_release] if project.current_release else []),
            ]
        )


def test_the_settings_take_their_releases_from_the_projects() -> None:
    settings = Settings()
    assert settings.default_releases == ["vllm==0.33.0", "sglang==0.5.23", "torch==2.13.0"]
    assert "transformers==5.24.0" in settings.older_releases
    assert settings.older_releases[0] == "vllm==0.32.0"
    assert len(settings.older_releases) == len(set(settings.older_releases))


def test_the_default_torch_is_the_release_the_reproducers_pin() -> None:
    """Reproducers run the installed torch the `reproducers` extra pins; the default serve
    knows the raise sites of that same release."""
    extras = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    pinned = [r for r in extras["optional-dependencies"]["reproducers"] if r.startswith("torch")]
    assert pinned == [upstreams.BY_REPO[TORCH].current_release]


@pytest.mark.parametrize(
    ("project", "minors", "oldest"),
    [
        (upstreams.BY_REPO[VLLM], [(0, minor) for minor in range(2, 33)], "0.2.7"),
        (upstreams.BY_REPO[SGLANG], [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)], "0.1.17"),
        (upstreams.BY_REPO[TORCH], [(2, minor) for minor in range(13)], "2.0.1"),
    ],
)
def test_older_releases_reach_back_to_the_first_releases_people_paste_from(
    project: upstreams.UpstreamProject, minors: list[tuple[int, int]], oldest: str
) -> None:
    """Real pastes come from every release people still run (vLLM 0.2 of 2023, SGLang 0.1,
    torch 2.0): each minor release has its last patch harvested, newest first."""
    versions = [Version(spec.partition("==")[2]) for spec in project.older_releases]
    assert versions == sorted(versions, reverse=True)
    assert str(versions[-1]) == oldest
    assert sorted({version.release[:2] for version in versions}) == minors


def test_where_a_repository_keeps_its_package() -> None:
    assert upstreams.path_prefix(SGLANG) == "python/"
    assert upstreams.path_prefix(TRANSFORMERS) == "src/"
    assert upstreams.path_prefix(VLLM) == ""
    assert upstreams.path_prefix("example/unknown") == ""


def test_a_frame_in_site_packages_names_its_project() -> None:
    def frame(path: str) -> Frame:
        return Frame(file=path, line=1, function="f", source="")

    site = "/usr/lib/python3.12/site-packages"
    assert frame_repo(frame(f"{site}/transformers/modeling_utils.py")) == TRANSFORMERS
    assert frame_repo(frame(f"{site}/torch/nn/modules/module.py")) == TORCH
    # vLLM's own folder named after transformers still belongs to vLLM
    assert frame_repo(frame(f"{site}/vllm/model_executor/models/transformers/base.py")) == VLLM
    assert frame_repo(frame("/home/me/project/train.py")) is None


def test_log_lines_name_the_project_through_its_module() -> None:
    assert log_repos(clean_lines("INFO 08-14 12:00:01 [core.py:710] Engine started")) == {VLLM}
    assert log_repos(clean_lines("[2026-08-14 12:00:01 TP0] Scheduler hit an exception")) == {
        SGLANG
    }
    path = '  File "/opt/venv/lib/site-packages/transformers/trainer.py", line 9, in train'
    assert log_repos(clean_lines(path)) == {TRANSFORMERS}


def test_sglangs_kernels_are_known_as_a_package_of_sglangs_repository() -> None:
    """`sgl_kernel` (the wheels `sgl-kernel`, later `sglang-kernel`) is built from SGLang's
    repository, under `sgl-kernel/python/`: its frames and paths name SGLang, and a record
    of it is found by the path its installed frames show."""
    assert upstreams.package_repo("sgl_kernel") == SGLANG
    assert upstreams.package_prefix("sgl_kernel") == "sgl-kernel/python/"
    assert upstreams.package_prefix("sglang") == "python/"
    assert upstreams.bundled_file(SGLANG, "sgl-kernel/python/sgl_kernel/load_utils.py")
    assert not upstreams.bundled_file(SGLANG, "python/sglang/srt/server_args.py")
    site = "/opt/.venv/lib/python3.12/site-packages"
    kernel = Frame(file=f"{site}/sgl_kernel/load_utils.py", line=188, function="f", source="")
    assert frame_repo(kernel) == SGLANG
    path = f'  File "{site}/sgl_kernel/__init__.py", line 5, in <module>'
    assert log_repos(clean_lines(path)) == {SGLANG}
    suffixes = path_suffixes("sgl-kernel/python/sgl_kernel/load_utils.py")
    assert kernel.file.endswith(suffixes)


def test_a_release_names_the_exact_release_of_a_package_it_requires(tmp_path: Path) -> None:
    """From its `.dist-info/METADATA` (as SGLang 0.4.9.post6's and 0.5.11's say), whatever
    the extra; a range pins nothing, and another distribution's metadata beside it (an
    installed site-packages) is not read."""
    names = ("sgl-kernel", "sglang-kernel")

    def pinned(folder: str, *requires: str) -> tuple[str, str] | None:
        root = tmp_path / folder
        (root / f"{folder}.dist-info").mkdir(parents=True)
        lines = [f"Requires-Dist: {line}" for line in requires]
        metadata = "Metadata-Version: 2.4\n" + "\n".join(lines) + "\n"
        (root / f"{folder}.dist-info" / "METADATA").write_text(metadata)
        (root / "vllm-0.9.2.dist-info").mkdir()
        (root / "vllm-0.9.2.dist-info" / "METADATA").write_text("Requires-Dist: sgl-kernel==0.1")
        return distribution_metadata.pinned_requirement(root, "sglang", names)

    assert pinned("sglang-0.4.8", 'sgl-kernel; extra == "blackwell"') is None
    assert pinned(
        "sglang-0.4.9.post6",
        'sgl-kernel; extra == "blackwell"',
        'sgl-kernel==0.2.7; extra == "srt"',
    ) == ("sgl-kernel", "0.2.7")
    assert pinned("sglang-0.5.11", "sglang-kernel==0.4.2") == ("sglang-kernel", "0.4.2")


def test_the_checks_of_every_project_are_known() -> None:
    assert upstreams.checks()["torch._check_index"] == "IndexError"


def _sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def test_a_src_layout_sdist_unpacks_like_a_wheel(tmp_path: Path) -> None:
    """transformers keeps its package in src/: unpacked, it sits at the top as in a wheel,
    so harvest finds it where it finds every other project's."""
    sdist = _sdist(
        tmp_path / "demo-1.0.tar.gz",
        {
            "demo-1.0/PKG-INFO": "Name: demo\n",
            "demo-1.0/setup.py": "",
            "demo-1.0/src/demo/__init__.py": "",
            "demo-1.0/src/demo/core.py": "raise ValueError('x')\n",
            "demo-1.0/tests/test_core.py": "",
        },
    )
    unpacking._unpack_sdist(sdist, "demo", "1.0", tmp_path / "out")
    unpacked = sorted(
        p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.py")
    )
    assert unpacked == ["demo/__init__.py", "demo/core.py", "setup.py"]


@pytest.mark.network
def test_transformers_is_harvested_and_answers_its_own_errors(
    settings: Settings, session: Session
) -> None:
    """The whole path for a project added by one module: its release is fetched and
    harvested with its repository's layout, and a real paste of its error finds its draft."""
    from app.harvest import drafts

    cache = release_cache.Upstream(settings.cache_dir)
    release = drafts.resolve_release("transformers==5.24.0", releases=cache)
    assert (release.repo, release.path_prefix) == (TRANSFORMERS, "src/")
    result, counts = drafts.harvest_release(session, release)
    session.commit()
    assert result.files > 1000
    assert counts.created > 1000
    matcher = Matcher(session.get_bind(), settings.cache_dir, settings.max_paste_bytes)
    matches = match_text(matcher, session, CHAT_TEMPLATE_PASTE).matches
    assert matches, "the chat-template error found nothing"
    best = matches[0].record
    assert (best.repo, best.file_path) == (
        TRANSFORMERS,
        "src/transformers/tokenization_utils_base.py",
    )
    stored = records.get_record(session, best.id)
    assert stored is not None
    link = stored.record.github_url or ""
    assert link.startswith("https://github.com/huggingface/transformers/blob/v5.24.0/src/")


def test_triton_is_an_upstream_of_its_own() -> None:
    triton = "triton-lang/triton"
    assert upstreams.path_prefix(triton) == "python/"
    assert upstreams.package_repo("triton") == triton
    frame = Frame(
        file="/usr/lib/python3.12/site-packages/triton/runtime/autotuner.py",
        line=1,
        function="run",
        source="",
    )
    assert frame_repo(frame) == triton
    assert "triton==" not in " ".join(Settings().default_releases)  # harvested on demand


@pytest.mark.network
def test_a_triton_release_is_harvested_under_its_python_folder() -> None:
    from app.harvest import drafts

    release = drafts.resolve_release(
        "triton==3.6.0", releases=release_cache.Upstream(Settings().cache_dir)
    )
    assert release.repo == "triton-lang/triton"
    extracted = drafts.extract_release(release)
    paths = {draft.record["filePath"] for draft in extracted.result.drafts}
    assert len(extracted.valid) > 500
    assert all(path.startswith("python/triton/") for path in paths)
