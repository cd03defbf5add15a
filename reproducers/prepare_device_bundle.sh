#!/usr/bin/env bash
# Prepare .device-carry/ (git-ignored) so a GPU machine without network runs the CUDA
# reproducers: the upstream files they load, in the cache directory's layout, plus wheels
# of errkb's own runtime needs that such a machine may lack (pydantic-settings, google-re2).
#
#   reproducers/prepare_device_bundle.sh [RECORD_ID ...]   (default: every cuda reproducer)
#
# On the GPU machine, from the repo root:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .device-carry/pydeps/*.whl
#   PYTHONPATH=/tmp/site ERRKB_CACHE_DIR=.device-carry python3 reproducers/RECORD_ID.py
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
DEVICE_PYTHON_VERSION=${DEVICE_PYTHON_VERSION:-3.12}  # the GPU machine's python3
BUNDLE=.device-carry

ids=("$@")
if [ ${#ids[@]} -eq 0 ]; then
  mapfile -t ids < <(grep -l '^DEVICES = ("cuda",)' reproducers/*.py | xargs -n1 basename -s .py)
fi
for id in "${ids[@]}"; do
  "$PYTHON" "reproducers/$id.py" --bundle "$BUNDLE" | tail -n 1
done

mapfile -t pins < <("$PYTHON" -c 'import importlib.metadata as m
for name in ("pydantic", "pydantic-core", "pydantic-settings", "python-dotenv",
             "typing-inspection", "annotated-types", "typing-extensions", "google-re2"):
    print(f"{name}=={m.version(name)}")')
rm -rf "$BUNDLE/pydeps"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --implementation cp \
  --python-version "$DEVICE_PYTHON_VERSION" --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$BUNDLE/pydeps" "${pins[@]}"
du -sh "$BUNDLE"
