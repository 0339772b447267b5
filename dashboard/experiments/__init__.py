"""Experiments: scenarios, runs and their results, sweeps, reproductions, comparisons, charts and downloads."""
