"""The score stage: the quality classifier, KenLM perplexity and buckets, and the score rules."""
