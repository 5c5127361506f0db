"""Command-line interface: ``bayes-attn <command>``."""

import sys

from ._main import build_parser, main as _main


def main(argv=None) -> int:
    code = _main(argv)
    if argv is None:
        sys.exit(code)
    return code


__all__ = ["main", "build_parser"]
