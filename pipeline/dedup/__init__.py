"""Deduplication: exact (normalized-text hash) first; fuzzy and semantic passes build on it."""
