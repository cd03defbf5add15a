"""Settings: every one is documented where an operator looks for it, docs/operations.md."""

from app.config import PROJECT_ROOT, Settings


def test_every_setting_is_documented_in_the_operations_page() -> None:
    operations = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    prefix = Settings.model_config["env_prefix"]
    names = [f"{prefix}{name}".upper() for name in Settings.model_fields]
    assert names
    assert [name for name in names if f"`{name}`" not in operations] == []
