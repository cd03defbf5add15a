"""The curation loop: hits (what people meet), the queue (what to explain next), scaffolds,
and the overview of how the dataset is used and holds."""
