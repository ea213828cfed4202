"""The clean stage: normalisation, boilerplate lines, PII, language ID, words per language, heuristic signals and their per-language calibration."""
