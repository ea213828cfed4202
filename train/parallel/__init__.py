"""Tensor-parallel layers over torch.distributed groups: the model is built of them (train/model.py); the
DeepSpeed pipeline stages are cut from the model in train/pipeline_parallel.py."""
