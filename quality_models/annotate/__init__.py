"""`glassbox annotate`: grade a stratified sample of a corpus's documents with a large model through any
OpenAI-compatible endpoint, into the label files `glassbox train-classifier --labels` reads (docs/quality.md).

One concern a module: sample.py (which documents), rubric.py (what is asked), grades.py (what the reply says),
run.py (the command: requests through train/serving/batch.py, labels and a summary from its results)."""
