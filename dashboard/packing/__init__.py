"""Packing analyses: simcore.packing's four techniques on a snapshot of a trace or a run."""
