"""Tokens: benchmark decontamination, the tokenizer and token shards."""
