"""Every random stream of the package, named in one place, and the seeded splits of models into folds.

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
#: splits ``(seed, PSEUDO_RUN, splits, repeat)`` (:func:`model_folds`); never a simulation's own run
#: (``run < PSEUDO_RUN``).
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


def model_folds(n_models: int, folds: int, repeats: int, seed: int, splits: int = INTERVAL_FOLDS):
    """Yield ``(index, kept, held_out)``: ``repeats`` seeded splits of the models into ``folds``.

    Examples
    --------
    >>> [(i, len(k), len(h)) for i, k, h in model_folds(5, 2, 1, seed=0)]
    [(0, 2, 3), (1, 3, 2)]
    """
    for repeat in range(repeats):
        order = stream((seed, PSEUDO_RUN), splits, repeat).permutation(n_models)
        for fold, held_out in enumerate(np.array_split(order, folds)):
            yield repeat * folds + fold, np.setdiff1d(order, held_out), held_out


def folds_by_kept(n_models: int, folds: int, repeats: int, seed: int, splits: int = INTERVAL_FOLDS) -> list:
    """:func:`model_folds` grouped by the models they keep, ``[(kept, [(index, held_out), ...]), ...]``, so that
    work on the kept models is done once per group; :func:`in_fold_order` puts the results back in fold order.

    Examples
    --------
    >>> [(len(kept), [i for i, _ in held]) for kept, held in folds_by_kept(3, 3, 2, seed=0)]
    [(2, [0, 3]), (2, [1, 4]), (2, [2, 5])]
    """
    groups: dict[bytes, tuple[np.ndarray, list]] = {}
    for index, kept, held_out in model_folds(n_models, folds, repeats, seed, splits):
        groups.setdefault(kept.tobytes(), (kept, []))[1].append((index, held_out))
    return list(groups.values())


def in_fold_order(groups: list, results) -> list:
    """Results computed per group of :func:`folds_by_kept` (one per held-out fold) in fold order."""
    by_index = {
        index: result
        for (_, held), per_fold in zip(groups, results, strict=True)
        for (index, _), result in zip(held, per_fold, strict=True)
    }
    return [by_index[index] for index in sorted(by_index)]
