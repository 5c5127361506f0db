"""Protein families: what a family needs before and after a Potts fit (docs/potts_proteins.md).

Before a fit: alignments in (``_alignment``: FASTA, A2M/A3M, Stockholm, focus columns and residue numbers)
and sequence reweighting with a validation split that leaks no near-duplicate (``_weights``).  After it:
contact scores and their precision (``_contacts``), true contacts from a structure of the focus protein
(``_structure``) and the contact-map figure (``_plots``).  Nothing here needs the Potts model: this layer
imports nothing from :mod:`bayes_attn.potts`, which owns the models and their fits; the command line
(``bayes-attn potts fit ALIGNMENT``, ``bayes-attn potts contacts``) wires the two.  Everything public is
re-exported here.
"""

from ._alignment import *  # noqa: F401,F403
from ._alignment import __all__ as _a0
from ._weights import *  # noqa: F401,F403
from ._weights import __all__ as _a1
from ._contacts import *  # noqa: F401,F403
from ._contacts import __all__ as _a2
from ._structure import *  # noqa: F401,F403
from ._structure import __all__ as _a3
from ._plots import *  # noqa: F401,F403
from ._plots import __all__ as _a4

__all__ = sorted({*_a0, *_a1, *_a2, *_a3, *_a4})
