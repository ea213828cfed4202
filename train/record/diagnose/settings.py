"""The thresholds of every kind of finding, and DiagnoseConfig, the union of them all.

Each kind's settings dataclass sits here under the kind's name (its rule in ``kinds/<kind>.py`` reads them
through the whole ``DiagnoseConfig``); kinds import from this module and nothing here imports a kind, so the
kinds, the registry that lists them and the settings they read form no import circle. Adding a kind with
thresholds: its dataclass here, in ``SETTINGS`` (the order the fields read in), and ``settings=(...)`` on its
``Kind``; a test checks that ``DiagnoseConfig`` holds exactly the fields the registered kinds declare.
"""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.schema import setting


# spike: kinds/spike.py
@dataclass
class SpikeSettings:
    spike_z: float = setting(6.0, ge=0)             # robust z of the loss above the accepted steps before it
    spike_grad_norm_z: float = setting(8.0, ge=0)   # the same for the gradient norm where the record has one; 0 = not
                                                    # used
    spike_window: int = setting(50, ge=2)           # accepted points whose step-to-step differences give the noise
                                                    # (MAD)
    spike_min_history: int = setting(20, ge=1)      # fewer accepted points before it: not judged (noise unknown)
    spike_min_rel: float = setting(0.1, ge=0)       # and 10% above the baseline: on a very smooth curve the noise is
                                                    # tiny
    spike_from_run: bool = True        # take a Glassbox run's own train.spike_* settings (off: the values here)
    spike_critical_rel: float = setting(0.5, gt=0)  # critical: a jump of 50% or more, or no recovery in the next
                                                    # points;
    spike_info_rel: float = setting(0.15, ge=0)     # info: one point under 15% that recovers at once (heavy-tailed
                                                    # batch noise does that now and then); else warning

    def check(self) -> str | None:
        if self.spike_info_rel > self.spike_critical_rel:
            return (f"spike_info_rel: {self.spike_info_rel:g} is above spike_critical_rel {self.spike_critical_rel:g}; "
                    "info is for the smaller jumps")
        return None


# divergence: kinds/divergence.py
@dataclass
class DivergenceSettings:
    divergence_rise: float = setting(0.10, gt=0)    # 10% above the lowest smoothed loss so far ...
    divergence_noise_k: float = setting(5.0, ge=0)  # ... and 5 noise sigmas of the smoothed curve (noisy small
                                                    # batches)
    divergence_min_frac: float = setting(0.05, gt=0, le=1)  # sustained for 5% of the run's points ...
    divergence_min_points: int = setting(5, ge=1)   # ... and at least this many (a spike that recovers is not one)


# flat: kinds/flat.py
@dataclass
class FlatSettings:
    flat_min_frac: float = setting(0.30, gt=0, le=1)  # a third of a run not improving is long; healthy power-law curves
                                                    # still lose several % over their last third
    flat_min_points: int = setting(8, ge=2)
    flat_tol: float = setting(0.01, ge=0)           # flat: |change| + flat_se_margin standard errors below 1% of the
    flat_se_margin: float = setting(1.0, ge=0)      # level (a noisy curve has to prove it is flat), and the
    flat_range: float = setting(0.03, ge=0)         # smoothed loss within 3% of the level across the stretch
    expected_floor: float | None = setting(None, ge=0)# nats; flat within floor_gap of it = converged, not a finding
    floor_gap: float = setting(0.3, ge=0)


# plateau: kinds/plateau.py
@dataclass
class PlateauSettings:
    plateau_early_drop: float = setting(0.20, ge=0, le=1)  # plateau: the loss had already fallen 20% from its start ...
    plateau_max_start: float = setting(0.50, gt=0, le=1)  # ... and the flat stretch starts in the first half of the run


# validations: kinds/validations.py
@dataclass
class ValidationSettings:
    val_min_points: int = setting(6, ge=2)          # validations needed to judge val_noisy and overfitting


# overfitting: kinds/overfitting.py
@dataclass
class OverfittingSettings:
    overfit_min_rise: float = setting(0.02, ge=0)   # validation 2% above its minimum at the end ...
    overfit_noise_k: float = setting(3.0, ge=0)     # ... and 3 sigmas of its point-to-point noise
    overfit_min_points: int = setting(3, ge=1)      # validation points after the minimum
    overfit_rising_share: float = setting(0.6, ge=0, le=1)  # share of rising steps among the validations
                                                    # after the minimum
    overfit_train_drop: float = setting(0.01, ge=0) # training loss 1% lower at the end than at the validation minimum


# val_noisy: kinds/val_noisy.py
@dataclass
class ValNoisySettings:
    val_noisy_ratio: float = setting(3.0, gt=0)     # validation sigma 3x the per-step training sigma ...
    val_noisy_min_rel: float = setting(0.01, ge=0)  # ... and 1% of the validation level (else a smooth curve's
                                                    # crumbs)
    val_noisy_warn_rel: float = setting(0.05, ge=0) # 5% of the level: a warning (it hides the 1% a data change moves)


# memorization: kinds/memorization.py
@dataclass
class MemorizationSettings:
    """The gap between validation and the training loss at the same steps, large and growing."""
    memo_min_points: int = setting(3, ge=2)         # validations needed: a gap that opens by nats shows with a few
                                                    # points
    memo_gap_rel: float = setting(0.10, ge=0)       # at the end, training 10% of the validation loss below it ...
    memo_gap_min: float = setting(0.10, ge=0)       # ... and at least 0.1 nats (healthy single-pass runs: gap about
                                                    # 0)
    memo_growth_rel: float = setting(0.5, ge=0, le=1)  # growing: at least half of the end gap opened since its smallest
                                                    # point
    memo_rising_share: float = setting(0.6, ge=0, le=1)  # share of widening steps after that point
    memo_noise_k: float = setting(3.0, ge=0)        # and the growth 3 sigmas of the gap's point-to-point noise
    memo_warning_rel: float = setting(0.20, ge=0)   # severity: info below a 20% gap, warning up to 40%, critical
                                                    # beyond
    memo_critical_rel: float = setting(0.40, ge=0)

    def check(self) -> str | None:
        if self.memo_warning_rel > self.memo_critical_rel:
            return (f"memo_warning_rel: {self.memo_warning_rel:g} is above memo_critical_rel "
                    f"{self.memo_critical_rel:g}; the warning band lies below the critical one")
        return None


# low_initial_loss: kinds/low_initial_loss.py
@dataclass
class LowInitialLossSettings:
    low_initial_gap_rel: float = setting(0.25, ge=0)  # the first losses 25% of ln(vocab) below it ...
    low_initial_gap_min: float = setting(1.0, ge=0) # ... and at least 1 nat below it
    low_initial_max_first_step: int = setting(10, ge=1)  # a record starting later has no initial loss to judge


# epochs_beyond_plan: kinds/epochs_beyond_plan.py
@dataclass
class EpochsSettings:
    epochs_tol: float = setting(0.05, ge=0)         # more than 5% past the plan


# Every kind's settings once, in the order of the registry's KINDS (the fields of DiagnoseConfig read in it).
SETTINGS: tuple[type, ...] = (SpikeSettings, DivergenceSettings, FlatSettings, PlateauSettings, ValidationSettings,
                              OverfittingSettings, ValNoisySettings, MemorizationSettings, LowInitialLossSettings,
                              EpochsSettings)


# A dataclass collects fields from its last base first: reversed, the fields read in the order of SETTINGS.
@dataclass
class DiagnoseConfig(*reversed(SETTINGS)):
    """Detector thresholds, the fields of every kind's settings. Relative thresholds are shares of the loss level
    at that point."""

    def check(self) -> str | None:
        """Each kind's own rules between its fields (glassbox/schema.py calls this)."""
        for cls in SETTINGS:
            own = cls.__dict__.get("check")
            if own and (problem := own(self)):
                return problem
        return None
