"""The JSON shape every reply shares: camelCase names on the wire, like the seed documents.

A model here is what a service returns (a match result, a record summary) as well as what
the API answers; pydantic models are domain objects too.
"""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """camelCase on the wire, like the seed documents."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
