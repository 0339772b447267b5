"""The REST API: the pages' features over JSON, under the same permission rules (dashboard.common.access)."""
