"""The command-line reference page, generated from ``simcore``'s own argument parsers.

Run by the docs build (``docs/hooks.py``); ``python docs/gen_cli.py`` prints the page. Nothing is
copied by hand: a new option appears here the next time the site is built.
"""

from __future__ import annotations

import argparse
import os

from simcore.cli import build_parser

INTRO = """# Command-line reference

Generated from the argument parsers of `simcore` (`simcore.cli.build_parser`) when the site is built,
so it lists exactly the options of this version. Every command also answers `--help`. Errors are one line
on stderr with exit status 2 (1 when a scheduler made an invalid decision, or `simcore rerun`'s numbers
differ from the archive's).
"""


def _cell(text: str) -> str:
    # Table cells: a bar ends the cell and square brackets would read as a Markdown link reference.
    return " ".join(text.split()).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            names += " (" + ", ".join(f"`{c}`" for c in action.choices) + ")"
        default = action.default
        shown = "" if default in (None, False, [], argparse.SUPPRESS) or action.required else f"`{default}`"
        if action.required and action.option_strings:
            shown = "required"
        rows.append(f"| {names} | {shown} | {_cell(action.help or '')} |")
    return rows


def page() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width: fix it
    root = build_parser()
    lines = [INTRO, "## `simcore`", "", "```text", root.format_usage().strip(), "```", ""]
    helps = _helps(root)
    lines += ["| command | what it does |", "|---|---|"]
    lines += [f"| [`{name}`](#simcore-{name}) | {_cell(helps.get(name, ''))} |" for name in _subcommands(root)]
    for name, sub in _subcommands(root).items():
        lines += ["", f"## `simcore {name}` {{#simcore-{name}}}", "", _cell(helps.get(name, "")) + ".", ""]
        lines += ["```text", sub.format_usage().strip(), "```", "", *_options_table(sub)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(page())
