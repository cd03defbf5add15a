"""Compiled libraries in tests: a tiny real ELF library built with gcc from the literals one
translation unit of torch leaves, and a package index on the loopback interface that serves a
wheel holding it, the way PyPI serves torch's (PEP 691's JSON, the file's sha256)."""

import hashlib
import http.server
import json
import shutil
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.harvest import drafts

# aten/src/ATen/core/adaption.cpp's device check is `c10::str("Expected all tensors ... but
# got ", arg, " is on ", ...)`; the assert names its own file and line.
UNIT = r"""
const char* file_of_unit(void) { return "/__w/pytorch/pytorch/aten/src/ATen/core/adaption.cpp"; }
const char* head(void) { return "Expected all tensors to be on the same device, but got "; }
const char* middle(void) { return ", different from other tensors on "; }
const char* tail(void) { return " (when checking argument in method "; }
const char* other(void) { return "No available kernel.  Aborting execution."; }
const char* assertion(void) {
  return "idx < n INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/c10/core/Device.cpp\":42, "
         "please report a bug to PyTorch. ";
}
"""
DEVICE_CHECK = (
    "Expected all tensors to be on the same device, but got {value}, different from other "
    "tensors on {value_2} (when checking argument in method {value_3}"
)


def build_library(folder: Path, source: str = UNIT, name: str = "libunit.so") -> Path:
    """`source` compiled by gcc into a shared library in `folder`; the test is skipped on a
    machine without gcc."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc to build a library with")
    (folder / "unit.c").write_text(source)
    built = folder / name
    command = ["gcc", "-shared", "-fPIC", "-O1", "-o", str(built), str(folder / "unit.c")]
    subprocess.run(command, check=True)
    return built


def write_wheel(path: Path, members: dict[str, bytes]) -> Path:
    """A wheel (a zip file) holding these members."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in members.items():
            wheel.writestr(name, data)
    return path


@contextmanager
def package_index(project: str, wheels: list[Path]) -> Iterator[str]:
    """A package index serving these files of one project at `URL/PROJECT/` (PEP 691's
    JSON, each file's sha256) and the files at `URL/files/NAME`, on a free loopback port:
    its simple URL, for PIP_INDEX_URL. Each file is listed with its sha256 as it is now."""
    files = {wheel.name: wheel for wheel in wheels}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            if self.path.rstrip("/") == f"/simple/{project}":
                listed = [
                    {
                        "filename": name,
                        "url": f"{base}/files/{name}",
                        "hashes": {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
                    }
                    for name, path in files.items()
                ]
                index = {"meta": {"api-version": "1.0"}, "name": project, "files": listed}
                body = json.dumps(index).encode()
                content_type = "application/vnd.pypi.simple.v1+json"
            elif self.path.startswith("/files/") and self.path[7:] in files:
                body = files[self.path[7:]].read_bytes()
                content_type = "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def torch_release_without_python(
    tmp_path: Path,
    nvidia: dict[str, Path],
    version: str = "2.13.0",
    native_root: Path | None = None,
) -> drafts.Release:
    """torch's release with no Python file: what these NVIDIA packages (and the headers
    under `native_root`) give alone."""
    root = tmp_path / "release-without-python"
    root.mkdir(exist_ok=True)
    spec = f"torch=={version}"
    return drafts.Release(
        spec, root, None, "pytorch/pytorch", f"v{version}", "", spec, native_root, nvidia=nvidia
    )
