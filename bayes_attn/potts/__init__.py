"""Factored attention and the generalized Potts model (docs/potts.md).

Data (``_model``, ``_mc``, ``_equilibrate``, ``_fields``, ``_data``), models (``_attention``, ``_plmdca``,
``_transformer``, ``_bayes``; their parameter records in ``_params``), the blocked weighted PL (``_pl``), fit
settings, the validation scan and the defaults for protein families (``_fit``), the starts of factored attention
(``_starts``), a fit's memory and cost before it starts (``_budget``), reconstruction and metrics
(``_gauge``, ``_metrics``) and theory (``_replica``, its figures in ``_plots``) are kept apart.  Everything
public is re-exported here.  What a protein family needs before and after a fit (alignments, sequence weights,
contacts, structures) is :mod:`bayes_attn.families`, beside this layer; sampling the Bayesian pseudo-posterior
of ``_bayes`` is :mod:`bayes_attn.potts_bayes`, a layer above.
"""

import importlib as _importlib
import warnings as _warnings


from ._params import *  # noqa: F401,F403
from ._params import __all__ as _a0
from ._model import *  # noqa: F401,F403
from ._model import __all__ as _a1
from ._mc import *  # noqa: F401,F403
from ._mc import __all__ as _a2
from ._equilibrate import *  # noqa: F401,F403
from ._equilibrate import __all__ as _a3
from ._attention import *  # noqa: F401,F403
from ._attention import __all__ as _a4
from ._gauge import *  # noqa: F401,F403
from ._gauge import __all__ as _a5
from ._plmdca import *  # noqa: F401,F403
from ._plmdca import __all__ as _a6
from ._transformer import *  # noqa: F401,F403
from ._transformer import __all__ as _a7
from ._replica import *  # noqa: F401,F403
from ._replica import __all__ as _a8
from ._plots import *  # noqa: F401,F403
from ._plots import __all__ as _a9
from ._bayes import *  # noqa: F401,F403
from ._bayes import __all__ as _a10
from ._fields import *  # noqa: F401,F403
from ._fields import __all__ as _a11
from ._data import *  # noqa: F401,F403
from ._data import __all__ as _a12
from ._files import *  # noqa: F401,F403
from ._files import __all__ as _a13
from ._metrics import *  # noqa: F401,F403
from ._metrics import __all__ as _a14

from ._pl import *  # noqa: F401,F403
from ._pl import __all__ as _b0
from ._fit import *  # noqa: F401,F403
from ._fit import __all__ as _b1
from ._starts import *  # noqa: F401,F403
from ._starts import __all__ as _b2
from ._budget import *  # noqa: F401,F403
from ._budget import __all__ as _b3

__all__ = sorted(
    {
        *_a0,
        *_a1,
        *_a2,
        *_a3,
        *_a4,
        *_a5,
        *_a6,
        *_a7,
        *_a8,
        *_a9,
        *_a10,
        *_a11,
        *_a12,
        *_a13,
        *_a14,
        *_b0,
        *_b1,
        *_b2,
        *_b3,
    }
)

#: the names that moved to :mod:`bayes_attn.families` (the protein-family layer); ``bayes_attn.potts.NAME``
#: still resolves them, with a DeprecationWarning naming the new home
_MOVED = (
    "ALPHABETS",
    "FORMATS",
    "Alignment",
    "read_alignment",
    "parse_fasta",
    "parse_stockholm",
    "detect_format",
    "encode",
    "THETA",
    "check_theta",
    "neighbour_counts",
    "sequence_weights",
    "max_identity",
    "split_validation",
    "MIN_SEPARATION",
    "LONG_RANGE",
    "frobenius_scores",
    "apc",
    "contact_scores",
    "ranked_pairs",
    "top_k_sizes",
    "precision_at",
    "CONTACT_CUTOFF",
    "MIN_IDENTITY",
    "ChainResidues",
    "read_chain",
    "read_chain_ids",
    "align_to_focus",
    "contact_map",
    "plot_contact_map",
)


def __getattr__(name):
    """The deprecation shim of ``_MOVED`` (PEP 562): the object from :mod:`bayes_attn.families`, with a warning.

    ``families`` is a sibling layer, which this layer may not import; the import here runs only when an old
    name is used, by its module name as a string, and tests/test_layers.py allows exactly this one (its
    ``SHIMS``).  Nothing in the package, its tests, benchmarks or examples uses the old names."""
    if name in _MOVED:
        _warnings.warn(
            f"bayes_attn.potts.{name} has moved to bayes_attn.families.{name}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_importlib.import_module("bayes_attn.families"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
