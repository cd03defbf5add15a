"""The JSON shape every reply shares: camelCase names on the wire, like the seed documents,
each model read from a domain object's attributes."""

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """camelCase on the wire, like the seed documents."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class Extended:
    """A domain object with a few attributes more, for a wire model whose shape joins it
    with what lies elsewhere (the dataset version a page was read at, the runs of a
    reproducer): `Model.model_validate(Extended(obj, name=value))` reads `name` here and
    every other field from `obj`."""

    def __init__(self, obj: object, **more: Any) -> None:
        self._obj = obj
        self._more = more

    def __getattr__(self, name: str) -> Any:
        if name in self._more:
            return self._more[name]
        return getattr(self._obj, name)
