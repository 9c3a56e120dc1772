"""Every random stream of the package, named in one place.

Each random choice draws from its own stream, ``default_rng([*key, *tail])`` with ``key = (seed, run)``,
whatever the order of the work or the number of workers. Changing an integer below changes every number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import TailoredBenchError

#: TailoredBench: the G-set's initial medoids, ``(*key, G_SET)``.
G_SET = 0
#: TailoredBench: a target's N-set, ``(*key, N_SET, target, budget)``.
N_SET = 1
#: Baselines, ``(*key, stream, budget)``: Random and random+regression share one stream (a paired comparison).
RANDOM_ITEMS = 0
ANCHOR_POINTS = 2
GP_IRT_ANCHORS = 3
#: Source models playing targets, to calibrate intervals: run keys ``(seed, PSEUDO_RUN + fold)`` and fold
#: splits ``(seed, PSEUDO_RUN, stream, repeat)``; never a simulation's own run (``run < PSEUDO_RUN``).
PSEUDO_RUN = 1_000_000
INTERVAL_FOLDS = 0
STACKING_FOLDS = 1
#: TailoredBench+'s stacking weights: run keys ``(seed, STACK_RUN + fold)``.
STACK_RUN = 2_000_000
#: The static coreset of the embedding study, ``(seed, CORESET)``.
CORESET = 7
#: gp-IRT's fixed choices (validation split, IRT start values): the fit depends on the sources only.
GP_IRT_FIT = 0
#: The jitter of the calibration figure's points.
FIGURE_JITTER = 0


def stream(key: Sequence[int], *tail: int) -> np.random.Generator:
    """The generator of one stream: ``default_rng([*key, *tail])``."""
    return np.random.default_rng([*key, *tail])


def as_key(random_state) -> tuple[int, ...]:
    """The integer key behind a ``random_state``: an int ``s`` is ``(s, 0)`` (run 0 of seed ``s``), a sequence of
    ints itself, a Generator one draw, ``None`` fresh entropy.

    Examples
    --------
    >>> as_key(3), as_key([3, 7])
    ((3, 0), (3, 7))
    >>> len(as_key(None)), len(as_key(np.random.default_rng(0)))
    (2, 2)
    """
    if random_state is None:
        entropy = np.random.SeedSequence().entropy  # a fresh SeedSequence's entropy is an int
        return (int(entropy) % 2**63, 0)  # type: ignore[arg-type]
    if isinstance(random_state, np.random.Generator):
        return (int(random_state.integers(2**63)), 0)
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise TailoredBenchError(f"random_state must be non-negative, got {random_state}")
        return (int(random_state), 0)
    if isinstance(random_state, Sequence) and not isinstance(random_state, str):
        values = tuple(random_state)
        if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0 for v in values):
            return tuple(int(v) for v in values)
    raise TailoredBenchError(
        f"random_state must be None, a non-negative int, a sequence of them or a numpy Generator, got {random_state!r}"
    )


def generator(random_state) -> np.random.Generator:
    """A Generator from a ``random_state`` (a Generator is used as it is)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    as_key(random_state)  # refuses what is not a random state, in the package's words
    return np.random.default_rng(random_state)
