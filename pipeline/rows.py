"""The rows every stage reads and writes: their columns, statuses and the dedup reasons, in one place
(docs/architecture.md, "Data contracts")."""

# What happened to one input record in a stage.
KEPT = "kept"
REJECTED = "rejected"      # a readable document that a rule dropped; lands in rejected/ with its reason
UNREADABLE = "unreadable"  # bytes we could not turn into a document (broken gzip, truncated record, ...)

# What a stage says about each row it writes (dropped from the documents it keeps), and dedup's pointer
# from a duplicate to the kept copy.
STATUS_COLUMNS = ("status", "reason", "detail")
DUPLICATE_OF = "duplicate_of"
BOOKKEEPING_COLUMNS = STATUS_COLUMNS + (DUPLICATE_OF,)

# Why dedup drops a document (the reason column), in the order the dedup steps run.
EXACT_DUPLICATE = "exact_duplicate"
NEAR_DUPLICATE = "near_duplicate"
SEMANTIC_DUPLICATE = "semantic_duplicate"
DUPLICATE_REASONS = (EXACT_DUPLICATE, NEAR_DUPLICATE, SEMANTIC_DUPLICATE)

# Why the extract stage drops a record read a second time (the same file under two names, overlapping
# crawl segments): the same id as a kept document, so the same document; `duplicate_of` is that id.
REPEATED_RECORD = "repeated_record"

# Provenance and identity columns every document row carries. `metadata`: a JSONL/Parquet record's fields
# other than its text, id and url, as one JSON object (null for web records and records with none).
METADATA = "metadata"
DOC_COLUMNS = ["id", "source", "source_id", "text", "url", "warc_record_id", "warc_date", "input_file", METADATA]

# Which extractor wrote a web document's text (pipeline/extract/engines.py; null for text that came
# extracted), and, with `extract.engine: union`, the second extractor's text of the same page: the clean
# stage keeps the first of the two that passes its rules and drops this column (pipeline/clean/union.py).
ENGINE = "engine"
TEXT_ALT = "text_alt"

# One row per record a stage reads: the document columns, then what happened to it and why.
ROW_KEYS = ("id", "source", "source_id", "text", "url", "warc_record_id", "warc_date", "input_file", METADATA,
            "status", "reason", "detail", "duplicate_of", "content_type", "charset", "http_status", "payload_bytes",
            ENGINE, TEXT_ALT)


# The score every later stage reads: each document's own language's quality (pipeline/score/batches.py). Data
# folders scored before per-language classifiers hold it as quality_ft, read in its place.
QUALITY = "quality"
LEGACY_QUALITY = "quality_ft"


def quality_column(names) -> str | None:
    """The column of a table's quality score: quality, or quality_ft in a folder scored before it; None."""
    return next((c for c in (QUALITY, LEGACY_QUALITY) if c in names), None)


def make_row(**fields) -> dict:
    """A stage row with every key of ROW_KEYS, in order; unnamed fields are None."""
    row = dict.fromkeys(ROW_KEYS)
    row.update(fields)
    return row


def local_path(path: str) -> str:
    """Spark hands executors `file:` URIs; the Python readers open plain paths."""
    if path.startswith("file:"):
        from urllib.parse import unquote, urlparse

        parsed = urlparse(path)
        return unquote(parsed.path) if parsed.netloc in ("", "localhost") else unquote(path[5:])
    return path
