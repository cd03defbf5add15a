"""Every shape the JSON API answers or accepts, one module per area.

They live together, below the services, so that one package says what the wire carries:
the API answers them, the client and the CLI print them, and a service whose result is
already its wire shape (a match result, a record summary) returns it from here. Each
model reads a domain object's attributes (`Model.model_validate(obj)`): a field the object
lacks is derived by a validator or a computed field of the model, never copied by hand.
Nothing here imports a service, so any layer may import it.
"""
