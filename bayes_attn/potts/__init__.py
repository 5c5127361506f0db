"""Factored attention and the generalized Potts model (docs/potts.md).

Data (``_model``, ``_mc``, ``_equilibrate``), models (``_attention``, ``_plmdca``,
``_transformer``, ``_bayes``; their parameter records in ``_params``), reconstruction and metrics (``_gauge``) and theory
(``_replica``) are kept apart; protein families have their own modules: alignments in
(``_alignment``), reweighting (``_weights``), the blocked weighted PL (``_pl``), fit settings and the scan
(``_fit``), contacts and structures (``_contacts``, ``_structure``).  Everything public is re-exported here.
Sampling the Bayesian pseudo-posterior of ``_bayes`` is :mod:`bayes_attn.potts_bayes`, a layer above.
"""

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

from ._alignment import *  # noqa: F401,F403
from ._alignment import __all__ as _b0
from ._weights import *  # noqa: F401,F403
from ._weights import __all__ as _b1
from ._contacts import *  # noqa: F401,F403
from ._contacts import __all__ as _b2
from ._structure import *  # noqa: F401,F403
from ._structure import __all__ as _b3
from ._pl import *  # noqa: F401,F403
from ._pl import __all__ as _b4
from ._fit import *  # noqa: F401,F403
from ._fit import __all__ as _b5
from ._starts import *  # noqa: F401,F403
from ._starts import __all__ as _b6
from ._budget import *  # noqa: F401,F403
from ._budget import __all__ as _b7

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
        *_b4,
        *_b5,
        *_b6,
        *_b7,
    }
)
