"""The REST API reference page, generated from the OpenAPI schema the platform serves at /api/openapi.json.

The schema is drf-spectacular's, made by ``manage.py spectacular`` in a child process (the docs build
stays free of Django), so this page and /api/docs/ describe the same operations. Run by the docs build
(``docs/hooks.py``); ``python docs/gen_rest.py`` prints the page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("get", "post", "put", "patch", "delete")

INTRO = """# REST API reference

Generated from the platform's OpenAPI schema when the site is built. A running platform serves the same
schema at `/api/openapi.json` and a page to try the operations at `/api/docs/`. Authenticate with a token
from your account page: `Authorization: Bearer <token>`. Errors are JSON with a `detail`. The
[REST API guide](../guide/api.md) shows a whole experiment driven from Python.
"""


def schema() -> dict[str, Any]:
    """The platform's OpenAPI schema, as ``manage.py spectacular`` writes it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "schema.json")
        # DEBUG=1: the development settings (no SECRET_KEY needed); its own var/ so nothing is left behind.
        env = {**os.environ, "DEBUG": "1", "SIMCORE_VAR_DIR": tmp, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "manage.py", "spectacular", "--format", "openapi-json", "--file", str(out)]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"manage.py spectacular failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return json.loads(out.read_text())  # type: ignore[no-any-return]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "allOf" in prop:
        return " & ".join(_type(p) for p in prop["allOf"])
    if "oneOf" in prop or "anyOf" in prop:
        return " or ".join(_type(p) for p in prop.get("oneOf", prop.get("anyOf", [])))
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"] if v is not None)
    return f"{kind} ({prop['format']})" if "format" in prop else str(kind)


def _body(op: dict[str, Any]) -> str:
    content = op.get("requestBody", {}).get("content", {})
    for media in ("application/json", "multipart/form-data"):
        if media in content:
            return f"Body ({media}): {_type(content[media].get('schema', {}))}"
    return ""


def _operation(path: str, method: str, op: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    if op.get("summary"):
        lines += [op["summary"] + ".", ""]
    if op.get("description"):
        lines += [op["description"], ""]
    params = op.get("parameters", [])
    if params:
        lines += ["| parameter | in | type | meaning |", "|---|---|---|---|"]
        lines += [
            f"| `{p['name']}`{' (required)' if p.get('required') else ''} | {p['in']} "
            f"| {_cell(_type(p.get('schema', {})))} | {_cell(p.get('description', ''))} |"
            for p in params
        ]
        lines.append("")
    if _body(op):
        lines += [_body(op), ""]
    for code, resp in op.get("responses", {}).items():
        media = resp.get("content", {})
        kind = next((_type(m.get("schema", {})) for m in media.values()), "")
        lines.append(f"- **{code}** {_cell(resp.get('description', ''))} {kind}".rstrip())
    return [*lines, ""]


def _component(name: str, comp: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if comp.get("description"):
        lines += [_cell(comp["description"]), ""]
    if "enum" in comp:
        return [*lines, "One of " + ", ".join(f"`{v}`" for v in comp["enum"] if v is not None) + ".", ""]
    props = comp.get("properties", {})
    if props:
        required = set(comp.get("required", []))
        lines += ["| field | type | meaning |", "|---|---|---|"]
        lines += [
            f"| `{k}`{' (required)' if k in required else ''}{' (read-only)' if v.get('readOnly') else ''} "
            f"| {_cell(_type(v))} | {_cell(v.get('description', ''))} |"
            for k, v in props.items()
        ]
    return [*lines, ""]


def page(doc: dict[str, Any] | None = None) -> str:
    doc = doc if doc is not None else schema()
    info = doc.get("info", {})
    lines = [
        INTRO,
        f"Schema: *{info.get('title', '')}*, version {info.get('version', '')}. " + _cell(info.get("description", "")),
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).append((path, method, item[method]))
    for tag, ops in by_tag.items():
        lines += [f"## {tag}", ""]
        for path, method, op in ops:
            lines += _operation(path, method, op)
    lines += ["## Schemas", ""]
    for name, comp in doc.get("components", {}).get("schemas", {}).items():
        lines += _component(name, comp)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(page())
