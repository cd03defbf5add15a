"""The advice fields of a record: what people write about an error (where it happens, how to
fix, handle or prevent it). A record errkb makes from code alone (harvest's drafts,
matching's statement records) leaves them null: one definition for both, so that the two
name the same fields."""

UNWRITTEN_ADVICE: dict[str, None] = dict.fromkeys(
    (
        "commonSituations",
        "solutions",
        "exampleFix",
        "handlingStrategy",
        "validationCode",
        "typeGuard",
        "tryCatchPattern",
        "preventionTips",
    )
)
"""The advice fields, null, in the schema's order: spread into a made record's document."""
