"""``lf.stats``: the statistics levelfield reports, for use on your own numbers.

Intervals and paired tests (``wilson_interval``, ``paired_test``, ...), sample-size planning
(``sample_size``, ``minimum_detectable_effect``), judge-error correction (``correct_rate``, and from a
judge's probabilities ``soft_rate``), the noise split by source (``split_variance``) and the words for
a change against a baseline (``measure_change``, ``describe_change``)::

    lf.stats.sample_size(p0=0.8, mde=0.05, power=0.8, paired=True, discordance=0.15).cases   # 469
"""

from ._core.stats.certify import JudgeCertification, MetricCertification, certify_rates, labels_needed, lower_bound
from ._core.stats.change import Change, describe_change, measure_change
from ._core.stats.components import NoiseSplit, split_variance
from ._core.stats.inference import *  # noqa: F403
from ._core.stats.inference import __all__ as _stats_all
from ._core.stats.judge_correction import JudgeCorrection, cohen_kappa, correct_rate
from ._core.stats.planning import (
    MeasuredDesign,
    SampleSize,
    design_effect,
    mcnemar_power,
    measure_design,
    minimum_detectable_effect,
    sample_size,
)
from ._core.stats.soft_labels import Calibration, SoftRate, calibration, soft_rate
from ._lazy import rehome

__all__ = [
    *_stats_all,
    "SampleSize",
    "sample_size",
    "minimum_detectable_effect",
    "design_effect",
    "mcnemar_power",
    "MeasuredDesign",
    "measure_design",
    "JudgeCorrection",
    "correct_rate",
    "cohen_kappa",
    "SoftRate",
    "soft_rate",
    "Calibration",
    "calibration",
    "JudgeCertification",
    "MetricCertification",
    "certify_rates",
    "lower_bound",
    "labels_needed",
    "Change",
    "measure_change",
    "describe_change",
    "NoiseSplit",
    "split_variance",
]

# ``help(lf.stats.sample_size)`` names this module, not the private one that defines it.
rehome(__name__, {name: globals()[name] for name in __all__})
