"""Upload forms: a cluster file, and a trace in one of the import formats with its options."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from dashboard.common.names import validate_name
from dashboard.traces.imports import format_choices
from dashboard.traces.models import TraceFormat
from dashboard.traces.uploads import InputFile, check_upload_size
from simcore.core.errors import SimcoreError
from simcore.core.limits import MAX_SEED
from simcore.presets import CLUSTERS


def check_size(f: Any) -> Any:
    try:
        check_upload_size(f.size)  # before the content is read
    except SimcoreError as e:
        raise forms.ValidationError(f"{f.name}: {e}" if f.size else str(e)) from None
    return f


class UploadForm(forms.Form):
    """One file (a cluster JSON file)."""

    name = forms.CharField(
        max_length=100, required=False, help_text="optional; defaults to the file name", validators=[validate_name]
    )
    file = forms.FileField()

    def clean_file(self) -> Any:
        f = self.cleaned_data["file"]
        try:
            check_upload_size(f.size)  # before the content is read
        except SimcoreError as e:
            raise forms.ValidationError(str(e)) from None
        return f

    def upload_args(self) -> dict[str, Any]:
        """The keyword arguments of create_upload (reads the file)."""
        f = self.cleaned_data["file"]
        return {"filename": f.name or "", "content": f.read()}

    def field_for(self, message: str) -> str:
        return "file"


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented recipe); cleans to a list, each size-checked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        items = data if isinstance(data, (list, tuple)) else [data]
        single = super().clean
        out = [single(d, initial) for d in items] if any(items) else [single(None, initial)]
        return [check_size(f) for f in out if f]


class TraceUploadForm(forms.Form):
    """A real trace and its import options (see dashboard.traces.imports.check_import_options)."""

    name = forms.CharField(
        max_length=100, required=False, help_text="optional; defaults to the file name", validators=[validate_name]
    )
    format = forms.ChoiceField(choices=format_choices, required=False, initial=TraceFormat.CSV)
    file = MultipleFileField(
        label="trace file(s)",
        help_text="CSV or SWF: one file; Google 2011: the task_events "
        "part(s), in time order (part 0 first); WfCommons: one or more instances (.json), one job each. Plain or .gz",
    )
    job_events = MultipleFileField(
        required=False, label="Google job_events part(s)", help_text="optional; cross-checked against the task events"
    )
    machine_events = forms.FileField(
        required=False,
        label="Google machine_events file",
        help_text="optional; the cluster is then the machines present at time 0",
    )
    on_error = forms.ChoiceField(
        choices=[
            ("raise", "stop at the first bad row (error names file, line, field)"),
            ("skip", "skip bad rows, count them in the report"),
        ],
        required=False,
        initial="raise",
        label="bad rows",
        help_text="every format; a CSV row with an empty or non-numeric field is such a row",
    )
    unfinished = forms.ChoiceField(
        choices=[("cut", "cut at the window's end"), ("drop", "drop")],
        required=False,
        initial="cut",
        label="tasks running at the end",
        help_text="Google, Alibaba, Azure",
    )
    running_at_start = forms.ChoiceField(
        choices=[("keep", "keep: arrive at the start with their remaining run"), ("drop", "drop")],
        required=False,
        initial="keep",
        label="tasks running at the start",
        help_text="Google, Alibaba, Azure: tasks already running when the window (or the file) begins",
    )
    start_s = forms.FloatField(
        required=False,
        min_value=0,
        label="window start (s)",
        widget=forms.NumberInput(attrs={"step": "any"}),
        help_text="Google, SWF, Alibaba, Azure; blank: the trace's first event (Azure: its start)",
    )
    end_s = forms.FloatField(
        required=False,
        min_value=0,
        label="window end (s)",
        widget=forms.NumberInput(attrs={"step": "any"}),
        help_text="blank: the trace's end",
    )
    cluster = forms.ChoiceField(
        required=False,
        label="normalise against",
        help_text="blank: the trace's machines (machine_events, SWF header) or the google-2011 preset (a CSV: "
        "google-2011 when it requests cpu and mem, else none). WfCommons: the cores tasks are checked against "
        "(blank: dse-2020)",
    )
    classes = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=100,
        label="k-means classes",
        help_text="optional: K job classes for LoTES (section 5.3.2), stored with the trace",
    )
    class_window_hours = forms.FloatField(
        required=False,
        min_value=0.001,
        initial=24.0,
        label="class window (h)",
        widget=forms.NumberInput(attrs={"step": "any"}),
        help_text="classes are learnt on the jobs of the first hours",
    )
    class_seed = forms.IntegerField(required=False, min_value=0, max_value=MAX_SEED, initial=0, label="class seed")
    class_duration = forms.BooleanField(required=False, label="cluster on durations too")

    OPTIONS = (
        "format",
        "on_error",
        "unfinished",
        "running_at_start",
        "start_s",
        "end_s",
        "cluster",
        "classes",
        "class_window_hours",
        "class_seed",
        "class_duration",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["cluster"]).choices = [("", "from the trace (default)")] + [
            (n, n) for n in CLUSTERS.names()
        ]

    def clean_machine_events(self) -> Any:
        f = self.cleaned_data.get("machine_events")
        return check_size(f) if f else None

    def upload_args(self) -> dict[str, Any]:
        """The keyword arguments of create_upload (reads the files)."""
        cd = self.cleaned_data
        fmt = cd.get("format") or TraceFormat.CSV
        main = "task_events" if fmt == TraceFormat.GOOGLE2011 else "trace"
        files = [InputFile(main, f.name or "", f.read()) for f in cd["file"]]
        files += [InputFile("job_events", f.name or "", f.read()) for f in cd.get("job_events") or []]
        if cd.get("machine_events"):
            files.append(InputFile("machine_events", cd["machine_events"].name or "", cd["machine_events"].read()))
        return {"files": files, "options": {k: cd.get(k) for k in self.OPTIONS}}

    def field_for(self, message: str) -> str:
        """The field a services error is about: the option it starts with, else the files."""
        for name in self.OPTIONS:
            if message.startswith(name):
                return name
        return "job_events" if "job_events" in message and "task_events" not in message else "file"


def upload_form(kind: str, *args: Any, **kwargs: Any) -> UploadForm | TraceUploadForm:
    """The page's form for an upload kind (a trace takes several files and import options)."""
    return TraceUploadForm(*args, **kwargs) if kind == "trace" else UploadForm(*args, **kwargs)
