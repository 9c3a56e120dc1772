"""Evaluate a new model for real, in steps around lm-eval runs, each step written to a plan folder.

- :mod:`~tailoredbench.workflow.benchmark`: one benchmark's plan (:class:`PlanState`): the G-set, then the N-set
  or the precision mode's rounds, then the estimate with its interval.
- :mod:`~tailoredbench.workflow.suite`: a suite's plan (:class:`SuiteState`): every benchmark's probe in one
  ``--samples`` file, the native sources chosen on all of them.
- :mod:`~tailoredbench.workflow.folder`: what both share: the folder's lock, the sealed ``state.json``, and the
  files of a step put in place together.
"""

from .benchmark import (
    G_SET,
    INTERVAL_LEVEL,
    N_SET,
    ROUND_METHODS,
    NSet,
    PlanState,
    Rounds,
    check_round_method,
    estimate,
    fitted,
    plan_g_set,
    plan_n_set,
    plan_round,
    read_state,
)
from .suite import (
    SuiteNSet,
    SuiteRounds,
    SuiteState,
    estimate_suite,
    is_suite_plan,
    plan_suite_g_set,
    plan_suite_n_set,
    plan_suite_round,
    read_suite_state,
)

__all__ = [
    "G_SET",
    "INTERVAL_LEVEL",
    "N_SET",
    "ROUND_METHODS",
    "NSet",
    "PlanState",
    "Rounds",
    "SuiteNSet",
    "SuiteRounds",
    "SuiteState",
    "check_round_method",
    "estimate",
    "estimate_suite",
    "fitted",
    "is_suite_plan",
    "plan_g_set",
    "plan_n_set",
    "plan_round",
    "plan_suite_g_set",
    "plan_suite_n_set",
    "plan_suite_round",
    "read_state",
    "read_suite_state",
]
