"""Checkpoints: their files, resharding to another layout, and Hugging Face weights in."""
