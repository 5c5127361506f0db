"""The names that moved from bayes_attn.potts to bayes_attn.families still resolve from their old home, as the same
objects, with a DeprecationWarning that names the new one (potts/__init__.py, PEP 562 ``__getattr__``)."""

import pytest

import bayes_attn.families as families
import bayes_attn.potts as potts

#: every name of the old ``bayes_attn.potts.__all__`` that now lives in bayes_attn.families
OLD_NAMES = (
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


def test_the_moved_names_are_the_families_layer():
    assert set(OLD_NAMES) == set(potts._MOVED) == set(families.__all__)
    assert not set(OLD_NAMES) & set(potts.__all__)  # the old home no longer lists them


@pytest.mark.parametrize("name", OLD_NAMES)
def test_old_attribute_warns_and_is_the_same_object(name):
    with pytest.warns(
        DeprecationWarning, match=rf"bayes_attn\.potts\.{name} has moved to bayes_attn\.families\.{name}"
    ):
        old = getattr(potts, name)
    assert old is getattr(families, name)


def test_old_from_import_warns_at_the_caller():
    with pytest.warns(DeprecationWarning, match="bayes_attn.families.read_alignment") as record:
        from bayes_attn.potts import read_alignment
    assert read_alignment is families.read_alignment
    assert record[0].filename == __file__


def test_other_names_are_untouched():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert potts.fit_scan is potts._fit.fit_scan  # a name that stayed: no warning
    with pytest.raises(AttributeError, match="no attribute 'read_alignments'"):
        potts.read_alignments  # a name that never existed
