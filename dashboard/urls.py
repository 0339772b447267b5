from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import views

urlpatterns = [
    path("", views.experiment_list, name="experiment-list"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment-detail"),
    path("experiments/<int:pk>/progress.json", views.experiment_progress, name="experiment-progress"),
    path("experiments/<int:pk>/cancel/", views.experiment_cancel, name="experiment-cancel"),
    path("experiments/<int:pk>/download/<str:kind>", views.experiment_download, name="experiment-download"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/download/<str:kind>", views.run_download, name="run-download"),
    path("compare/", views.compare, name="compare"),
    path("uploads/", views.uploads, name="uploads"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
