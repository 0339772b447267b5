"""The static-file storage of collected deployments (production and ``make run``)."""

from __future__ import annotations

from typing import Any

from whitenoise.storage import CompressedManifestStaticFilesStorage


class CollectedStaticStorage(CompressedManifestStaticFilesStorage):
    """Whitenoise's compressed, content-hashed files, with hashed URLs even when DEBUG is on.

    Django's manifest storage hands out unhashed names under DEBUG, which
    whitenoise then serves uncached; ``make run`` runs with DEBUG and must
    serve Plotly's 4.8 MB script compressed and cached for a year, as
    production does.
    """

    def url(self, name: Any, force: bool = False) -> str:
        return super().url(name, force=True)
