"""Proxy-model ablations: does a pipeline change make a better model? (`glassbox ablate SPEC.yaml`)

Each variant of a base pipeline config is run through the ordinary stages, tokenized with one fixed
tokenizer, and trained as small proxy models at an equal token budget over several seeds; the proxies are
scored on held-out text per domain and each variant is compared with the base, paired by seed (Welch's
interval for the null control, on other seeds).
"""
