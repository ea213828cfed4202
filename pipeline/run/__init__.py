"""The machinery every stage runs on: work units, the resumable runner, accounting, progress and the Spark session."""
