"""Column names and row statuses shared by every stage (see DESIGN.md, "Data contracts")."""

# What happened to one input record in a stage.
KEPT = "kept"
REJECTED = "rejected"      # a readable document that a rule dropped; lands in rejected/ with its reason
UNREADABLE = "unreadable"  # bytes we could not turn into a document (broken gzip, truncated record, ...)

# Provenance and identity columns every document row carries.
DOC_COLUMNS = ["id", "source", "source_id", "text", "url", "warc_record_id", "warc_date", "input_file"]
