"""A compiled library's read-only data: the `.rodata` sections of a real ELF file (built here
with gcc, and torch's installed libc10.so), the small file the release cache keeps of them,
and files that are neither, or cut short, refused with their reason."""

from pathlib import Path

import pytest

from app.upstreams.elf import read_only_data, rodata_sections, write_rodata
from tests.helpers.libraries import build_library


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("elf"))


def test_the_kept_file_gives_back_the_sections_and_their_offsets(
    library: Path, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    for path in (library, Path(torch.__file__).parent / "lib" / "libc10.so"):
        sections = rodata_sections(path)
        assert sections
        assert all(offset > 0 and data for offset, data in sections)
        kept = tmp_path / f"{path.name}.rodata"
        write_rodata(sections, kept)
        assert read_only_data(kept) == sections == read_only_data(path)
        assert kept.stat().st_size == sum(16 + len(data) for _, data in sections) + 15


def test_the_literals_are_in_the_read_only_data(library: Path) -> None:
    data = b"".join(data for _, data in rodata_sections(library))
    assert b"No available kernel.  Aborting execution.\0" in data


def test_a_file_neither_elf_nor_kept_or_cut_short_is_refused_with_its_reason(
    library: Path, tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.so"
    garbage.write_bytes(b"not an ELF file at all")
    cut_library = tmp_path / "cut.so"
    cut_library.write_bytes(library.read_bytes()[:200])
    kept = tmp_path / "kept.rodata"
    write_rodata(rodata_sections(library), kept)
    cut_header = tmp_path / "cut-header.rodata"
    cut_header.write_bytes(kept.read_bytes()[:20])
    cut_data = tmp_path / "cut-data.rodata"
    cut_data.write_bytes(kept.read_bytes()[:-1])
    with pytest.raises(ValueError, match="neither an ELF file"):
        read_only_data(garbage)
    with pytest.raises(ValueError, match="ELF"):
        rodata_sections(garbage)
    with pytest.raises(ValueError, match="cut short"):
        read_only_data(cut_library)
    for cut in (cut_header, cut_data):
        with pytest.raises(ValueError, match="read-only data file cut short"):
            read_only_data(cut)
