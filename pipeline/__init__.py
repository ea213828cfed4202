"""Glassbox corpus pipeline: record-level logic, testable without Spark."""
