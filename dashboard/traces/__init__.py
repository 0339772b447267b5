"""Traces: uploaded clusters and traces, trace imports (a background task), saved column maps of foreign CSVs."""
