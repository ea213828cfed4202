"""The model: a Llama-style GPT built of tensor-parallel layers, its config and its kernels."""
