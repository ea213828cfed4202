"""Tensor-parallel layers over torch.distributed groups and the DeepSpeed pipeline built from them."""
