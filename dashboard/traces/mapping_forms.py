"""The column-mapping page's forms: a CSV to map, and a map built from its header (simcore.traces.colmap)."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from dashboard.common.names import validate_name
from dashboard.traces.forms import check_size
from simcore.core.errors import ParameterError
from simcore.presets import CLUSTERS
from simcore.traces import colmap

#: The fields the page maps (another resource: type the whole map in the text field).
TARGETS: tuple[tuple[str, str, bool], ...] = (
    ("submit_s", "submission time (s)", True),
    ("duration_s", "duration (s)", True),
    ("cpu", "cpu request", True),
    ("mem", "mem request", False),
    # A row standing for several identical jobs (Alibaba v2017 batch_task's number_of_instances).
    ("count", "identical copies (count)", False),
)
SCALES = [("", "as is"), ("/", "divided by"), ("*", "times")]


class DraftForm(forms.Form):
    """Step 1: the CSV (any column names), plain or gzipped."""

    name = forms.CharField(
        max_length=100, required=False, help_text="optional; defaults to the file name", validators=[validate_name]
    )
    file = forms.FileField(label="CSV file", help_text=".csv or .csv.gz with a header line")

    def clean_file(self) -> Any:
        return check_size(self.cleaned_data["file"])


class MapForm(forms.Form):
    """Step 2: for each field a column, or a difference of two, optionally scaled; or the map typed as text."""

    column_map = forms.CharField(
        required=False,
        label="or type the map",
        max_length=2000,
        help_text="instead of the choices above, e.g. submit_s=start_time,duration_s=end_time-start_time,"
        "cpu=plan_cpu/100,mem=plan_mem (the --map grammar of simcore import); a constant keeps rows before "
        "the trace's zero (submit_s=task_create_time+1078), count=number_of_instances makes identical copies",
    )
    where = forms.CharField(
        required=False,
        max_length=2000,
        label="keep only rows where",
        help_text="column=value[|value...], e.g. status=Terminated; blank: every row",
    )
    on_error = forms.ChoiceField(
        choices=[
            ("raise", "stop at the first bad row"),
            ("skip", "skip bad rows (e.g. an empty end time), count them"),
        ],
        initial="skip",
        label="bad rows",
    )
    cluster = forms.ChoiceField(required=False, label="check against")
    save_as = forms.CharField(
        required=False,
        max_length=100,
        label="save this map as",
        help_text="optional; reuse it for the next file",
        validators=[validate_name],
    )

    def __init__(self, header: list[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header = header
        cols = [("", "-")] + [(c, c) for c in header]
        for t, label, _ in TARGETS:
            self.fields[f"{t}_col"] = forms.ChoiceField(choices=cols, required=False, label=label)
            self.fields[f"{t}_minus"] = forms.ChoiceField(choices=cols, required=False, label="minus")
            self.fields[f"{t}_op"] = forms.ChoiceField(choices=SCALES, required=False, label="scale")
            self.fields[f"{t}_factor"] = forms.FloatField(
                required=False, label="by", widget=forms.NumberInput(attrs={"step": "any"})
            )
        cast(forms.ChoiceField, self.fields["cluster"]).choices = [
            ("", "the default (google-2011 for cpu and mem, else none)")
        ] + [(n, n) for n in CLUSTERS.names()]

    def rows(self) -> list[tuple[str, list[forms.BoundField]]]:
        """(label, the four bound fields) per target, for the template's table."""
        return [(label, [self[f"{t}_{k}"] for k in ("col", "minus", "op", "factor")]) for t, label, _ in TARGETS]

    def _chosen(self, cd: dict[str, Any]) -> list[str]:
        items = []
        for t, label, required in TARGETS:
            col, minus, op, factor = (cd.get(f"{t}_{k}") for k in ("col", "minus", "op", "factor"))
            if not col:
                if minus or op or factor is not None:
                    self.add_error(f"{t}_col", f"{label}: pick the column (a minus or a scale needs one)")
                elif required:
                    self.add_error(f"{t}_col", f"{label}: pick a column")
                continue
            if minus and minus == col:
                self.add_error(f"{t}_minus", f"{label}: {col} minus itself is always 0; pick another column")
                continue
            if bool(op) != (factor is not None):
                self.add_error(f"{t}_factor", f"{label}: a scale needs both 'divided by'/'times' and a number")
                continue
            if op == "/" and factor == 0:
                self.add_error(f"{t}_factor", f"{label}: divide by zero")
                continue
            text = f"{col}-{minus}" if minus else col
            if op:
                text = (f"({text})" if minus else text) + f"{op}{factor!r}"
            items.append(f"{t}={text}")
        return items

    def clean(self) -> dict[str, Any]:
        cd = super().clean() or {}
        typed = (cd.get("column_map") or "").strip()
        picked = any(cd.get(f"{t}_{k}") not in (None, "") for t, _, _ in TARGETS for k in ("col", "minus", "op"))
        if typed and picked:
            raise forms.ValidationError("ambiguous: either pick the columns or type the map, not both")
        if typed:
            text = typed
        else:
            items = self._chosen(cd)
            if self.errors:
                return cd
            text = ",".join(items)
        try:
            m = colmap.parse_map(text)
        except ParameterError as e:
            self.add_error("column_map" if typed else None, str(e))
            return cd
        where = (cd.get("where") or "").strip()
        w = None
        if where:
            try:
                w = colmap.parse_where(where)
            except ParameterError as e:
                self.add_error("where", str(e))
                return cd
        missing = [c for c in m.columns() + (w.columns() if w else []) if c not in self.header]
        if missing:
            self.add_error(
                "column_map" if typed else "where" if w and set(missing) <= set(w.columns()) else None,
                f"unknown column(s) {', '.join(missing)}; the header has {', '.join(self.header)}",
            )
            return cd
        cd["map_text"] = m.text()
        cd["where_text"] = w.text() if w else None
        return cd

    def options(self) -> dict[str, Any]:
        """The import options of :func:`dashboard.traces.imports.check_import_options`."""
        cd = self.cleaned_data
        return {"map": cd["map_text"], "where": cd["where_text"], "on_error": cd["on_error"], "cluster": cd["cluster"]}
