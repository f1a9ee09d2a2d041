import importlib

import vlbias.metrics as metrics


def test_every_reexported_measure_is_the_part_modules_own_function():
    for name, module in metrics._DEFINED_IN.items():
        assert getattr(metrics, name) is getattr(importlib.import_module(f"vlbias.{module}"), name), name
    assert "weat_p_value" in dir(metrics)


def test_issue_named_helpers_exist():
    from vlbias.diffusion import cads_gamma
    from vlbias.metrics import self_similarity, vrbs, weat_effect_size, weat_p_value  # noqa: F401

    assert cads_gamma(0.0, 0.6, 0.9) == 1.0 and cads_gamma(1.0, 0.6, 0.9) == 0.0
