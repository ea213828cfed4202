"""Names of an export folder's own files (written by train/export/export.py, read by the evaluation and the
GGUF conversion)."""

EXPORT_RECORD = "glassbox_export.json"   # what was exported, from which run and step, and its checks
