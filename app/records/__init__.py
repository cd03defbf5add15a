"""Records: the curated and harvested error records, their files, validation and locations."""
