"""Export of a trained run (``glassbox export RUN``, or ``python -m train.export.export``).

- ``weights``: a run's checkpoint (any TP x PP x DP layout) merged into one ``train.model.transformer.Llama`` state dict,
  and its mapping to ``LlamaForCausalLM`` names and config.
- ``rundata``: what a run directory points at: its manifest, tokenizer and held-out validation documents.
- ``hf_tokenizer``: the run's sentencepiece model as Hugging Face tokenizer files.
- ``consistency``: the exported model in ``transformers`` against the training model on the same tokens.
- ``gguf``: GGUF files of an export and their measured loss against it.
- ``export``: the command.
"""
