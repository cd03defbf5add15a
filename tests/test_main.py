"""The service does not depend on torch: importing it must not load torch (issue 2)."""

import subprocess
import sys


def test_import_app_does_not_import_torch() -> None:
    code = (
        "import sys, app.main, app.cli, app.records\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
