"""What the training loop uses each step: schedule, metrics rows, held-out loss, samples, the run record, fault hooks and thread settings."""
