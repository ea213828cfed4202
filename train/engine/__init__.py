"""The DeepSpeed engines the trainer runs the model in: pipeline stages cut from the model (pp > 1), or the one
stage of pp = 1 in DeepSpeed's plain engine."""
