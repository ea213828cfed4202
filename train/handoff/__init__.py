"""The hand-off of a trained run: export to a Hugging Face directory, and evaluation of runs and exports.

- ``weights``: a run's checkpoint (any TP x PP x DP layout) merged into one ``train.model.Llama`` state dict,
  and its mapping to ``LlamaForCausalLM`` names and config.
- ``rundata``: what a run directory points at: its manifest, tokenizer and held-out validation documents.
- ``consistency``: the exported model in ``transformers`` against the training model on the same tokens.
- ``export``: ``python -m train.export``.
- ``perplexity``, ``harness``, ``compare`` and ``evaluate``: ``python -m train.evaluate``.
"""
