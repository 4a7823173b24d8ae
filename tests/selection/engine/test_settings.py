"""Settings: defaults, JSON round trip and validation errors naming the field."""

from __future__ import annotations

import pytest

from selection.engine import EngineSettings, SettingsError


def test_defaults_are_valid_and_round_trip_through_json():
    settings = EngineSettings()
    assert settings.validate() == {}
    assert EngineSettings.from_dict(settings.to_dict()) == settings
    assert settings.field_weights["name"] == settings.field_weights["description"]
    assert settings.auto_fusion and settings.family_pull == 0.5
    assert settings.ensemble_weights["bm25f"] == 0.40


def test_a_partial_dict_overrides_only_its_fields():
    settings = EngineSettings.from_dict(
        {
            "hybrid_weights": {"embed": 0.5, "lexical": 0.5},
            "micro_anchors": [{"pattern": "refund", "tools": ["refund_order"]}],
        }
    )
    assert settings.hybrid_weight("embed") == 0.5
    assert settings.hybrid_weight("name") == 0.0
    assert settings.micro_anchors[0].tools == ("refund_order",)
    assert settings.candidate_pool == EngineSettings().candidate_pool


def test_validation_errors_name_the_field():
    settings = EngineSettings.from_dict(
        {
            "hybrid_weights": {"embed": 1.5, "lexical": 0.2, "colour": 0.1},
            "ensemble_weights": {"focus": -0.1},
            "micro_anchors": [{"pattern": "(unclosed", "tools": [], "boost": 9}],
            "transitions": {"a": {"b": 2.0}},
            "bm25_b": 1.5,
            "default_scorer": "magic",
            "no_schema_modes_allowed": ["everything"],
            "semantic_ceiling": 0.1,
        }
    )
    errors = settings.validate()
    assert set(errors) == {
        "hybrid_weights.embed",
        "hybrid_weights.colour",
        "ensemble_weights.focus",
        "micro_anchors[0].pattern",
        "micro_anchors[0].tools",
        "micro_anchors[0].boost",
        "transitions.a.b",
        "bm25_b",
        "default_scorer",
        "no_schema_modes_allowed[0]",
        "semantic_ceiling",
    }
    assert "regular expression" in errors["micro_anchors[0].pattern"]


def test_unknown_keys_and_wrong_shapes_are_rejected_with_the_field_name():
    with pytest.raises(SettingsError) as unknown:
        EngineSettings.from_dict({"candidate_pool_size": 10})
    assert set(unknown.value.errors) == {"candidate_pool_size"}
    with pytest.raises(SettingsError) as shape:
        EngineSettings.from_dict({"candidate_pool": "many", "exploration": "yes"})
    assert set(shape.value.errors) == {"candidate_pool", "exploration"}


def test_an_anchor_pattern_without_a_linear_time_match_is_refused():
    settings = EngineSettings.from_dict(
        {"micro_anchors": [{"pattern": "refund(?=now)", "tools": ["refund_order"]}]}
    )
    assert "micro_anchors[0].pattern" in settings.validate()


def test_a_catastrophic_anchor_pattern_matches_in_linear_time():
    import time

    from selection.engine.settings import compile_anchor

    settings = EngineSettings.from_dict(
        {"micro_anchors": [{"pattern": "(a+)+$", "tools": ["x"]}]}
    )
    assert settings.validate() == {}
    started = time.perf_counter()
    assert compile_anchor(settings.micro_anchors[0]).search("a" * 40 + "!") is None
    # Python's re needs minutes for this input; RE2 answers in microseconds.
    assert time.perf_counter() - started < 0.5


def test_anchors_match_without_regard_to_case():
    from selection.engine.settings import compile_anchor

    settings = EngineSettings.from_dict(
        {"micro_anchors": [{"pattern": "refund", "tools": ["x"]}]}
    )
    assert compile_anchor(settings.micro_anchors[0]).search("REFUND it") is not None
