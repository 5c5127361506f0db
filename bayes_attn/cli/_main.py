"""``bayes-attn`` command line.

Each subcommand lives in its own module ``bayes_attn.cli._<name>`` exposing
``register(subparsers)``; it adds a parser whose ``func(args) -> int`` runs the command.
Bad input (:class:`bayes_attn.InputError`) prints one line ``error: ...`` and exits 2.

Every command takes ``--cpus N|all`` (default ``$BAYES_ATTN_CPUS``, else the command's own: one core for
the small programs of ``sample``, ``theory`` and the rest, every core for ``sweep`` (whose workers pin
themselves) and ``potts fit`` (large matrix products)).  With fewer cores than the process may use, it claims
the least-loaded free ones and pins itself to them before JAX starts (:func:`bayes_attn._cpus.claim_cpus`), so
that two commands started together on a small machine do not fight over the same cores (docs/design.md).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings

from .._errors import ConfigWarning, InputError

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
    _add_cpus_option(parser)
    return parser


#: environment variable giving the default of ``--cpus`` for every command
CPUS_ENV = "BAYES_ATTN_CPUS"


def _add_cpus_option(parser: argparse.ArgumentParser) -> None:
    """``--cpus`` on every command that runs (the leaves of the subcommand tree)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        for child in dict.fromkeys(subs[0].choices.values()):
            _add_cpus_option(child)
        return
    parser.add_argument(
        "--cpus",
        default=None,
        metavar="N|all",
        help=f"cores to use: claim the N least-loaded free cores and pin to them, or all "
        f"(default: ${CPUS_ENV}, else {parser.get_default('cpus_default') or 1})",
    )


def cpus_wanted(value, default, usable: int) -> int:
    """The number of cores a command runs on: ``value`` (``--cpus``), else ``$BAYES_ATTN_CPUS``, else the
    command's ``default``; ``"all"`` is ``usable``.  Anything else than ``all`` or an integer from 1 to
    ``usable`` is an :class:`~bayes_attn.InputError` naming ``--cpus`` (or the variable)."""
    name = "--cpus"
    if value is None and os.environ.get(CPUS_ENV):
        name, value = CPUS_ENV, os.environ[CPUS_ENV]
    if value is None:
        value = default
    text = str(value).strip().lower()
    if text == "all":
        return usable
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= usable:
        raise InputError(
            f"{name}: must be 'all' or an integer from 1 to {usable} (the cores this process may use), got {value!r}"
        )
    return n


def _one_line_config_warnings(show):
    """``warnings.showwarning`` that prints a :class:`FutureWarning` (a deprecated config spelling) as one
    ``warning: ...`` line, and a :class:`~bayes_attn.ConfigWarning` too; every other warning goes to ``show``."""

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (FutureWarning, ConfigWarning)):
            print(f"warning: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    return showwarning


def main(argv=None, *, claim: bool | None = None) -> int:
    """Run one command.  ``claim``: claim and pin the command's cores (``--cpus``); default: only when
    ``argv`` is ``None`` (the console script), so that calling ``main([...])`` from Python, a notebook or a
    test leaves the calling process's affinity alone (``--cpus`` is still validated)."""
    claim = argv is None if claim is None else claim
    parser = build_parser()
    args = parser.parse_args(argv)
    from .._cache import enable_compilation_cache
    from .._cpus import allowed_cpus, claim_cpus
    from .._io import without_dask

    previous = warnings.showwarning
    if claim:  # the console script: a deprecation is one line, like an error
        warnings.showwarning = _one_line_config_warnings(previous)
    try:
        usable = len(allowed_cpus())
        n = cpus_wanted(args.cpus, getattr(args, "cpus_default", 1), usable)
        if claim:
            claim_cpus(n)  # before JAX starts its thread pools
        enable_compilation_cache()  # a second call of the same command does not compile again (bayes_attn._cache)
        with without_dask() if getattr(args, "without_dask", False) else contextlib.nullcontext():
            return int(args.func(args) or 0)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.showwarning = previous
