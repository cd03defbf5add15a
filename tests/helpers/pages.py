"""What every record page shows: its sections, in order."""

RECORD_SECTIONS = [
    "Error message",
    "What it means",
    "Source",
    "Solutions",
    "Example fix",
    "Defensive patterns",
    "Prevention",
    "When it happens",
    "Related errors",
    "Reproducer",
]
