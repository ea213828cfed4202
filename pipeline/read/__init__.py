"""Reading inputs: local or object-store paths, WARC/ARC records, charsets, JSONL/Parquet/text documents, and the ids read records get."""
