"""URLs: Experiments, runs, sweeps, reproductions, comparisons and their public links (included by dashboard.urls)."""

from django.urls import path

from dashboard.common import converters  # noqa: F401 (converters registers <id:>)
from dashboard.experiments import sweep_views, views

urlpatterns = [
    path("", views.experiment_list, name="experiment-list"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/<id:pk>/", views.experiment_detail, name="experiment-detail"),
    path("experiments/<id:pk>/progress.json", views.experiment_progress, name="experiment-progress"),
    path("experiments/<id:pk>/cancel/", views.experiment_cancel, name="experiment-cancel"),
    path("experiments/<id:pk>/fork/", views.experiment_fork, name="experiment-fork"),
    path("experiments/<id:pk>/share/", views.experiment_share, name="experiment-share"),
    path("experiments/<id:pk>/share/new-link/", views.experiment_new_link, name="experiment-new-link"),
    path("experiments/<id:pk>/share/revoke/", views.experiment_revoke_link, name="experiment-revoke-link"),
    path("experiments/<id:pk>/download/<str:kind>", views.experiment_download, name="experiment-download"),
    path("experiments/<id:pk>/runs/<id:run>/download/<str:kind>", views.run_download, name="run-download"),
    path("experiments/<id:pk>/sweep.json", sweep_views.sweep_json, name="experiment-sweep"),
    path("experiments/<id:pk>/sweep/<str:kind>", sweep_views.sweep_data, name="experiment-sweep-data"),
    path("experiments/<id:pk>/extend/", sweep_views.experiment_extend, name="experiment-extend"),
    path("runs/<id:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<id:pk>/retry/", sweep_views.run_retry, name="run-retry"),
    path("reproduce/", sweep_views.reproduce, name="reproduce"),
    path("shared/<str:token>/", views.shared_detail, name="shared-detail"),
    path("shared/<str:token>/progress.json", views.shared_progress, name="shared-progress"),
    path("shared/<str:token>/fork/", views.shared_fork, name="shared-fork"),
    path("shared/<str:token>/sweep.json", sweep_views.shared_sweep_json, name="shared-sweep"),
    path("shared/<str:token>/sweep/<str:kind>", sweep_views.shared_sweep_data, name="shared-sweep-data"),
    path("shared/<str:token>/download/<str:kind>", views.shared_download, name="shared-download"),
    path("shared/<str:token>/runs/<id:run>/download/<str:kind>", views.shared_run_download, name="shared-run-download"),
    path("compare/", views.compare, name="compare"),
]
