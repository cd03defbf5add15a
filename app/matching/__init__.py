"""Matching: pasted text -> clean lines -> exceptions -> candidate records -> ranked matches."""
