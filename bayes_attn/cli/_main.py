"""``bayes-attn`` command line.

Each subcommand lives in its own module ``bayes_attn.cli._<name>`` exposing
``register(subparsers)``; it adds a parser whose ``func(args) -> int`` runs the command.
Bad input (:class:`bayes_attn.InputError`) prints one line ``error: ...`` and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .._errors import InputError

#: subcommand modules, in help order
COMMANDS = ["sample", "diagnose", "report", "potts", "theory", "compare", "sweep", "evidence", "fit_attention"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse usage errors: one line, exit 2
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bayes-attn", description=__doc__.splitlines()[0])
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"bayes-attn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"bayes_attn.cli._{name}").register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .._cache import enable_compilation_cache

    enable_compilation_cache()  # a second call of the same command does not compile again (bayes_attn._cache)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
