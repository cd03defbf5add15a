"""The curation loop: hits (what people meet), the queue (what to explain next), scaffolds."""
