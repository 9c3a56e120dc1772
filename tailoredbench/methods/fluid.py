"""Adaptive IRT testing: Fluid Benchmarking (Hofmann et al., COLM 2025, arXiv 2509.11106) and ATLAS (Li et al.
2025, arXiv 2511.04689), beside TailoredBench.

1. A unidimensional 2PL model ``P(right) = sigmoid(a_j theta - b_j)`` is fitted on the source models only
   (:func:`tailoredbench.methods.irt.fitted`, cached with the other IRT fits).
2. The first item is the one of highest Fisher information ``a_j^2 p_j (1 - p_j)`` at the prior's centre
   (``theta = 0``); then, one at a time, the unasked item of highest information at the model's current
   ability, its maximum a posteriori estimate under a standard normal prior (as Fluid Benchmarking).
   Ties go to the lower item index.
3. The accuracy estimate: the answers on the asked items plus the model's predicted probability at its
   ability on every unasked item, averaged over all items.

At budget ``B`` a target is asked the first ``B`` items of its test, so a smaller budget's items are a
prefix of a larger one's (the option ``grow`` is accepted for the precision mode and changes nothing).
Nothing is drawn at random: a target's items depend only on its answers, so every run and seed gives the
same numbers. ATLAS stops a test when the ability's posterior standard error (:func:`ability`) falls below
a threshold; :func:`tailoredbench.sequential.stop_atlas` calibrates that threshold on source models.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from ..errors import TailoredBenchError, check_integer
from ..oracle import Oracle
from .base import Method
from .irt import LOGIT_CLIP, PRIOR, IRTModel, fitted

#: Precision of the ability's prior: standard normal.
ABILITY_PRIOR = PRIOR["theta"]
#: Newton steps of the ability's MAP (it converges in a few from the last item's).
NEWTON_STEPS = 50


def information(model: IRTModel, theta) -> np.ndarray:
    """Fisher information ``a_j^2 p_j (1 - p_j)`` of every item at each ability in ``theta``: (len(theta), n_items)."""
    p = expit(
        np.clip(np.outer(np.asarray(theta, dtype=float).reshape(-1), model.a[:, 0]) - model.b, -LOGIT_CLIP, LOGIT_CLIP)
    )
    return model.a[:, 0] ** 2 * p * (1 - p)


def _abilities(
    model: IRTModel, items: np.ndarray, answers: np.ndarray, start: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """MAP abilities (standard normal prior) of models each on its own items (models x k), by batched Newton
    steps, and their posterior standard errors ``1 / sqrt(1 + information of the asked items)``."""
    a, b = model.a[items, 0], model.b[items]
    theta = np.zeros(len(items)) if start is None else np.array(start, dtype=float)
    for _ in range(NEWTON_STEPS):
        p = expit(np.clip(a * theta[:, None] - b, -LOGIT_CLIP, LOGIT_CLIP))
        grad = ((p - answers) * a).sum(axis=1) + ABILITY_PRIOR * theta
        hessian = (p * (1 - p) * a**2).sum(axis=1) + ABILITY_PRIOR
        step = grad / hessian
        # the log-posterior is concave: a Newton step, capped for safety
        theta -= np.clip(step, -2.0, 2.0)
        if np.abs(step).max(initial=0.0) < 1e-10:
            break
    p = expit(np.clip(a * theta[:, None] - b, -LOGIT_CLIP, LOGIT_CLIP))
    return theta, 1 / np.sqrt((p * (1 - p) * a**2).sum(axis=1) + ABILITY_PRIOR)


def ability(model: IRTModel, items, answers) -> tuple[float, float]:
    """One model's MAP ability on ``items`` answered ``answers``, and its posterior standard error (ATLAS's)."""
    items, answers = _checked(model, items, answers)
    theta, se = _abilities(model, items[None, :], answers[None, :])
    return float(theta[0]), float(se[0])


def estimate(model: IRTModel, items, answers) -> float:
    """The accuracy estimate: answers on ``items`` plus predicted probabilities on the rest, over all items."""
    items, answers = _checked(model, items, answers)
    theta, _ = _abilities(model, items[None, :], answers[None, :])
    return float(_estimates(model, items[None, :], answers[None, :], theta)[0])


def next_items(model: IRTModel, answers, asked, k: int = 1) -> np.ndarray:
    """The ``k`` unasked items of highest Fisher information at the ability estimated from ``answers`` on
    ``asked`` (none asked: at the prior's centre), most informative first, ties to the lower index.

    With ``k = 1`` and the answers so far this is the item Fluid Benchmarking asks next.

    Examples
    --------
    >>> model = IRTModel(np.array([[1.0], [2.0], [2.0]]), np.array([0.0, 0.0, 3.0]), np.zeros((1, 1)))
    >>> next_items(model, [], [], k=2).tolist()
    [1, 0]
    """
    asked, answers = _checked(model, asked, answers)
    k = check_integer(k, "k", 1)
    if k > len(model.b) - len(asked):
        raise TailoredBenchError(f"{k} items asked for, but only {len(model.b) - len(asked)} are left unasked")
    theta = _abilities(model, asked[None, :], answers[None, :])[0] if len(asked) else np.zeros(1)
    info = information(model, theta)[0]
    info[asked] = -np.inf
    return np.argsort(-info, kind="stable")[:k]


def _checked(model: IRTModel, items, answers) -> tuple[np.ndarray, np.ndarray]:
    """Items as distinct indices of the model's items, and their 0/1 answers, or a one-line error."""
    given = np.asarray(items).reshape(-1)
    # an index with a fraction (1.7) would be truncated to another item without a word
    whole = given.dtype.kind in "iu" or (given.dtype.kind == "f" and bool((given == np.round(given)).all()))
    if len(given) and not whole:
        raise TailoredBenchError(f"items must be integer indices, got {given.tolist()[:5]}")
    items = given.astype(np.int64)
    answers = np.asarray(answers, dtype=float).reshape(-1)
    if len(items) != len(answers):
        raise TailoredBenchError(f"{len(answers)} answers for {len(items)} items")
    if len(items) and (items.min() < 0 or items.max() >= len(model.b) or len(np.unique(items)) < len(items)):
        raise TailoredBenchError(f"items must be distinct indices below {len(model.b)}")
    if not np.isin(answers, (0.0, 1.0)).all():
        raise TailoredBenchError("answers must be 0 or 1")
    return items, answers


def _estimates(model: IRTModel, items: np.ndarray, answers: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per model: (answers on its items + predicted probability on every other item) / all items."""
    p = model.probabilities(theta[:, None])
    p[np.arange(len(items))[:, None], items] = answers  # exact: no probability left on an asked item
    return p.mean(axis=1)


@dataclass(frozen=True)
class AdaptiveTests:
    """Adaptive tests of several targets: each one's items in the order asked, answers, and the ability
    and its standard error after each answer (all targets x items asked)."""

    items: np.ndarray
    answers: np.ndarray
    theta: np.ndarray
    se: np.ndarray

    def estimates(self, model: IRTModel, budget: int) -> np.ndarray:
        """Every target's accuracy estimate after its first ``budget`` answers."""
        budget = check_integer(budget, "budget", 1)
        if budget > self.items.shape[1]:
            raise TailoredBenchError(f"budget {budget} exceeds the {self.items.shape[1]} items of these tests")
        return _estimates(model, self.items[:, :budget], self.answers[:, :budget], self.theta[:, budget - 1])


def adaptive_tests(model: IRTModel, oracle: Oracle, budget: int) -> AdaptiveTests:
    """Every target of ``oracle`` tested adaptively, one item at a time, to ``budget`` items."""
    n_targets, n_items = oracle.n_targets, len(model.b)
    budget = check_integer(budget, "budget", 1)
    if budget > n_items:  # past the last item every item is asked: the most informative would repeat item 0
        raise TailoredBenchError(f"budget {budget} exceeds the item count {n_items}")
    items = np.empty((n_targets, budget), dtype=np.int64)
    answers, theta, se = (np.empty((n_targets, budget)) for _ in range(3))
    rows = np.arange(n_targets)
    unasked = np.ones((n_targets, n_items), dtype=bool)
    current = np.zeros(n_targets)
    for k in range(budget):
        info = information(model, current)
        info[~unasked] = -np.inf
        items[:, k] = info.argmax(axis=1)  # the first on ties: the lower index
        unasked[rows, items[:, k]] = False
        answers[:, k] = oracle.ask_each(items[:, k : k + 1])[:, 0]
        current, se[:, k] = _abilities(model, items[:, : k + 1], answers[:, : k + 1], start=current)
        theta[:, k] = current
    return AdaptiveTests(items, answers, theta, se)


class Fluid(Method):
    """Adaptive IRT testing by maximum Fisher information (Fluid Benchmarking; ATLAS's item choice)."""

    name = "fluid"
    kind = "baseline"
    options = MappingProxyType({"grow": False})
    in_paper = False
    #: Each fold of an interval's calibration refits the IRT model: ten, not one per source.
    interval_folds = 10

    def prepare(self, source, budgets, **_) -> dict:
        """The unidimensional 2PL model of the sources (cached)."""
        with threadpool_limits(limits=1):  # one thread: the same fit on any machine
            return {"model": fitted(source, 1)}

    def run(self, prepared, source, oracles, keys, **_):
        """Each run's targets tested to its largest budget; a smaller budget's oracle is asked the prefix.

        Runs whose oracles hide the same results share one test, which depends on nothing else."""
        model: IRTModel = prepared["model"]
        done: dict[str, AdaptiveTests] = {}
        out = []
        with threadpool_limits(limits=1):
            for run in oracles:
                budgets = sorted(run)
                largest = run[budgets[-1]]
                if largest.digest not in done:
                    done[largest.digest] = adaptive_tests(model, largest, budgets[-1])
                tests = done[largest.digest]
                for budget in budgets:
                    run[budget].ask_each(tests.items[:, :budget])
                out.append({"": {budget: tests.estimates(model, budget) for budget in budgets}})
        return out
