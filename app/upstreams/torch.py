"""PyTorch (pytorch/pytorch): `errkb serve` harvests the release the reproducers pin and run
as installed (taken from the installed distribution when it is that release, so the 0.5 GB
wheel is not downloaded again); its `torch._check*` functions raise when a condition fails."""

from app.upstreams.base import UpstreamProject

PROJECT = UpstreamProject(
    package="torch",
    repo="pytorch/pytorch",
    distribution="torch",
    current_release="torch==2.13.0",
    # torch/__init__.py: the exception each check raises when its condition is false.
    parameters_are_settings=True,
    public_api_entry_points=True,
    installed=True,
    checks={
        "torch._check": "RuntimeError",
        "torch._check_index": "IndexError",
        "torch._check_value": "ValueError",
        "torch._check_type": "TypeError",
        "torch._check_not_implemented": "NotImplementedError",
    },
    plain_values={"params": "[torch.nn.Parameter(torch.zeros(2))]"},
)
