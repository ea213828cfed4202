"""Tensor-parallel layers over torch.distributed groups: the model is built of them (train/model/transformer.py); the
DeepSpeed pipeline stages are cut from the model in train/engine/pipeline_stages.py."""
