"""The environment of a release's reproducers: what its modules import at load and this
interpreter lacks, installed by pip into a folder beside the release cache, with a manifest
of what the folder holds (`Upstream.ensure_environment`)."""

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.upstreams.distribution_metadata import installed_version
from app.upstreams.package_index import _normalized
from app.upstreams.release_errors import UpstreamError

ENVIRONMENT_MANIFEST = "errkb-environment.json"  # what an environment was made to hold
ENVIRONMENT_TIMEOUT_S = 1800  # a release's environment: a GB of wheels on a loaded machine


def _manifest(path: Path) -> dict[str, Any]:
    """What an environment says it holds (`ensure_environment`); empty when it says nothing."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _install_environment(target: Path, specs: list[str], held: dict[str, Any]) -> None:
    """Install `specs` and what they require into `target`, beside what it holds (`held`,
    its manifest).

    pip resolves them from the index's metadata (torch held at the release installed here,
    so nothing pulls in another torch or CUDA's packages); what this interpreter or the
    folder already has is left out, and so is what serves only an accelerator
    (`imports.accelerator_only`: a requirement of a requirement, named in the manifest as
    are the imports whose own requirement serves only one). The rest is installed without
    dependencies into a new folder, whose entries then join the target (new names only: a
    folder in use only grows). Specs that cannot be resolved together are resolved one by
    one and those that fail named in the manifest."""
    from app.upstreams import imports

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        constraints = tmp / "constraints.txt"
        torch = installed_version("torch")
        constraints.write_text(f"torch=={torch}\n" if torch else "", encoding="utf-8")
        items = imports.resolve(specs, constraints=constraints)
        refused: dict[str, str] = dict(held.get("refused", {}))
        if not items:
            own: list[dict] = []  # each spec's own release first: its pin wins over another's
            for spec in specs:
                alone = imports.resolve([spec], constraints=constraints)
                if not alone:
                    refused[spec] = "pip cannot resolve it with the torch installed here"
                name = _normalized(re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0])
                own += [
                    i for i in alone if _normalized(i.get("metadata", {}).get("name", "")) == name
                ]
                items += alone
            items = own + items
        constraints.unlink()
        installed = set(held.get("installed", []))
        have = {pin.partition("==")[0] for pin in installed}
        pins: dict[str, str] = {}
        accelerator: dict[str, str] = dict(held.get("accelerator_only", {}))
        for item in items:
            metadata = item.get("metadata", {})
            name = _normalized(metadata.get("name", ""))
            if not name or name in pins or name in have or installed_version(name):
                continue
            if why := imports.accelerator_only(metadata):
                accelerator[f"{name}=={metadata.get('version')}"] = why
            else:
                pins[name] = f"{name}=={metadata.get('version')}"
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        command += ["--disable-pip-version-check", "--only-binary=:all:", "--target", str(tmp)]
        if pins:
            done = subprocess.run(
                [*command, *sorted(pins.values())],
                capture_output=True,
                text=True,
                timeout=ENVIRONMENT_TIMEOUT_S,
                check=False,
            )
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise UpstreamError(
                    f"pip install failed (exit {done.returncode}): " + " | ".join(tail)
                )
        manifest = {
            "specs": specs,
            "installed": sorted(installed | set(pins.values())),
            "missing": held.get("missing", {}),
            "refused": refused,
            "accelerator_imports": held.get("accelerator_imports", {}),
            "accelerator_only": accelerator,
        }
        if not target.is_dir():
            tmp.rename(target)
        else:
            for entry in tmp.iterdir():
                if not (target / entry.name).exists():
                    entry.rename(target / entry.name)
        (target / ENVIRONMENT_MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UpstreamError(f"installing {target.name}'s environment failed: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
