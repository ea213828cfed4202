"""A sentencepiece model read without sentencepiece (the trainer's own tokenizer reader)."""
