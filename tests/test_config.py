"""Settings: every one is documented where an operator looks for it (issue 11)."""

from app.config import PROJECT_ROOT, Settings


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    prefix = Settings.model_config["env_prefix"]
    missing = [
        f"{prefix}{name}".upper()
        for name in Settings.model_fields
        if f"{prefix}{name}".upper() not in readme
    ]
    assert missing == []
