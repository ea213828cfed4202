"""Batch inference: ``python -m train.batch INPUT.jsonl OUTPUT.jsonl --url http://127.0.0.1:8000/v1``.

The logic lives in train/serving/batch.py (see its docstring and README, "Batch inference").
"""
import sys

from train.serving.batch import main

if __name__ == "__main__":
    sys.exit(main())
