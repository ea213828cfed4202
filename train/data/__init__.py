"""The trainer's data side: manifest reader, shard token cache, data order (sample index) and loader."""
