from django.contrib import admin

from dashboard.models import ClusterUpload, Experiment, Run, TraceUpload


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "cluster_label", "workload_label", "status", "created")
    list_filter = ("status",)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "experiment", "scheduler", "seed", "status", "fraction", "code_version")
    list_filter = ("status", "scheduler")


@admin.register(ClusterUpload, TraceUpload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "filename", "owner", "size_bytes", "created")
    exclude = ("content_gz",)
