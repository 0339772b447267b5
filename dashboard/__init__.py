"""The web platform: a Django project and app in one package, with its Celery app."""

from dashboard.celery import app as celery_app

__all__ = ["celery_app"]
