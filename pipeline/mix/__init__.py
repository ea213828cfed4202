"""The mixture: the token plan, the manifest the trainer reads, and its re-weighting."""
