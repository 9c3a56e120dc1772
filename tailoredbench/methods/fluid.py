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

Real use (``tailoredbench plan --method fluid --precision P``) runs the same test with two settings that the
simulations of the reports leave at their defaults: it starts from a set of items already asked, TailoredBench's
G-set of step 1 (option ``g_set_size``: chosen on the sources as TailoredBench chooses it, the ability's first
estimate taken from its answers), and then asks ``round_size`` items at a time, the most informative at the
ability after the previous round (one lm-eval run per round). With ``g_set_size=0`` and ``round_size=1`` it is
Fluid Benchmarking's test above. Its interval and stopping rule are calibrated by running exactly that
procedure on source models playing targets (:func:`tailoredbench.intervals.pseudo_targets` with these
options), and :func:`replay` runs the very code of :func:`adaptive_tests` on one model's answers so far.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from .. import rng
from ..errors import TailoredBenchError, check_integer
from ..kmedoids import binary_points, check_distance
from ..tailored import g_set
from .base import Method, Oracle
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
    # each model stops on its own step: its ability does not depend on the models tested with it
    active = np.ones(len(items), dtype=bool)
    for _ in range(NEWTON_STEPS):
        a_on, b_on, t_on = a[active], b[active], theta[active]
        p = expit(np.clip(a_on * t_on[:, None] - b_on, -LOGIT_CLIP, LOGIT_CLIP))
        grad = ((p - answers[active]) * a_on).sum(axis=1) + ABILITY_PRIOR * t_on
        hessian = (p * (1 - p) * a_on**2).sum(axis=1) + ABILITY_PRIOR
        step = grad / hessian
        # the log-posterior is concave: a Newton step, capped for safety
        theta[active] = t_on - np.clip(step, -2.0, 2.0)
        active[active] = np.abs(step) >= 1e-10
        if not active.any():
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
    and its standard error after each answer's round (all targets x items asked)."""

    items: np.ndarray
    answers: np.ndarray
    theta: np.ndarray
    se: np.ndarray

    def estimates(self, model: IRTModel, budget: int) -> np.ndarray:
        """Every target's accuracy estimate after its first ``budget`` answers (a round's end)."""
        budget = check_integer(budget, "budget", 1)
        if budget > self.items.shape[1]:
            raise TailoredBenchError(f"budget {budget} exceeds the {self.items.shape[1]} items of these tests")
        return _estimates(model, self.items[:, :budget], self.answers[:, :budget], self.theta[:, budget - 1])


def adaptive_tests(
    model: IRTModel, oracle: Oracle, budget: int, start: Sequence[int] = (), round_size: int = 1
) -> AdaptiveTests:
    """Every target of ``oracle`` tested adaptively to ``budget`` items: first the items ``start`` (none: the
    most informative at the prior's centre), then rounds of ``round_size`` items (the last one cut to the budget)."""
    return _adaptive(model, oracle.ask_each, oracle.n_targets, budget, start, round_size)[0]


def replay(
    model: IRTModel, answers: Mapping[int, float], budget: int, start: Sequence[int] = (), round_size: int = 1
) -> tuple[AdaptiveTests, np.ndarray]:
    """One model's test (:func:`adaptive_tests`, the same code) from its ``answers`` so far (item -> 0/1): the
    test up to its first round not wholly answered, and that round's items (none once ``budget`` is reached).

    Examples
    --------
    >>> model = IRTModel(np.array([[1.0], [2.0], [2.0]]), np.array([0.0, 0.0, 3.0]), np.zeros((1, 1)))
    >>> tests, pending = replay(model, {1: 1.0}, budget=3, start=[1], round_size=2)
    >>> tests.items.tolist(), pending.tolist()
    ([[1]], [2, 0])
    """

    def ask(items: np.ndarray) -> np.ndarray | None:
        found = [answers.get(int(i)) for i in items[0]]
        return None if any(v is None for v in found) else np.array([found], dtype=float)

    tests, pending = _adaptive(model, ask, 1, budget, start, round_size)
    return tests, pending[0]


def _adaptive(
    model: IRTModel,
    ask: Callable[[np.ndarray], np.ndarray | None],
    n_targets: int,
    budget: int,
    start: Sequence[int],
    round_size: int,
) -> tuple[AdaptiveTests, np.ndarray]:
    """The test of :func:`adaptive_tests`, asking ``ask(items)`` (targets x k) each round; it ends early when
    ``ask`` gives None, with the round it could not ask (targets x k; x 0 at the budget)."""
    n_items = len(model.b)
    first = np.asarray(start, dtype=np.int64).reshape(-1)
    round_size = check_integer(round_size, "round size", 1)
    budget = check_integer(budget, "budget", len(first) + 1 if len(first) else 1)
    if budget > n_items:  # past the last item every item is asked: the most informative would repeat item 0
        raise TailoredBenchError(f"budget {budget} exceeds the item count {n_items}")
    if len(first) and (first.min() < 0 or first.max() >= n_items):
        raise TailoredBenchError(f"a start item outside the {n_items} items")
    if len(np.unique(first)) < len(first):
        raise TailoredBenchError("the items a test starts with repeat")
    items = np.empty((n_targets, budget), dtype=np.int64)
    answers, theta, se = (np.empty((n_targets, budget)) for _ in range(3))
    rows = np.arange(n_targets)
    unasked = np.ones((n_targets, n_items), dtype=bool)
    current = np.zeros(n_targets)
    asked = 0
    chosen = np.tile(first, (n_targets, 1)) if len(first) else None
    while asked < budget:
        if chosen is None:
            info = information(model, current)
            info[~unasked] = -np.inf
            k = min(round_size, budget - asked)
            # the most informative first, ties to the lower index
            chosen = info.argmax(axis=1)[:, None] if k == 1 else np.argsort(-info, axis=1, kind="stable")[:, :k]
        got = ask(chosen)
        if got is None:
            break
        done = slice(asked, asked + chosen.shape[1])
        items[:, done], answers[:, done] = chosen, got
        unasked[rows[:, None], chosen] = False
        asked += chosen.shape[1]
        current, now = _abilities(model, items[:, :asked], answers[:, :asked], start=current)
        theta[:, done], se[:, done] = current[:, None], now[:, None]
        chosen = None
    pending = np.empty((n_targets, 0), dtype=np.int64) if chosen is None else chosen
    tests = AdaptiveTests(items[:, :asked], answers[:, :asked], theta[:, :asked], se[:, :asked])
    return tests, pending


class Fluid(Method):
    """Adaptive IRT testing by maximum Fisher information (Fluid Benchmarking; ATLAS's item choice).

    Options for real use's procedure (the module's docstring): ``g_set_size`` > 0, the test starts with a
    TailoredBench G-set of that size, chosen on the sources under ``g_set_distance`` with each run's key;
    ``round_size``, items asked per round after it. Every budget is then a round's end.
    """

    name = "fluid"
    kind = "baseline"
    options = MappingProxyType({"grow": False, "g_set_size": 0, "g_set_distance": "manhattan", "round_size": 1})
    in_paper = False
    real_use = True
    #: Each fold of an interval's calibration refits the IRT model: ten, not one per source.
    interval_folds = 10

    def check_options(self, options):
        checked = super().check_options(options)
        check_integer(checked["g_set_size"], "option g_set_size of method fluid", 0)
        check_integer(checked["round_size"], "option round_size of method fluid", 1)
        check_distance(checked["g_set_distance"])
        return checked

    def prepare(self, source, budgets, *, g_set_size=0, g_set_distance="manhattan", **_) -> dict:
        """The unidimensional 2PL model of the sources (cached), and with a G-set the items as points."""
        with threadpool_limits(limits=1):  # one thread: the same fit on any machine
            prepared: dict = {"model": fitted(source, 1)}
        if g_set_size:
            prepared["points"] = binary_points(source.T, check_distance(g_set_distance)).with_distances()
        return prepared

    def run(self, prepared, source, oracles, keys, *, g_set_size=0, round_size=1, **_):
        """Each run's targets tested to its largest budget; a smaller budget's oracle is asked the prefix.

        Runs whose oracles hide the same results, and start from the same G-set, share one test, which
        depends on nothing else."""
        model: IRTModel = prepared["model"]
        done: dict[tuple, AdaptiveTests] = {}
        out = []
        with threadpool_limits(limits=1):
            for run, key in zip(oracles, keys, strict=True):
                budgets = sorted(run)
                start = (
                    g_set(source, g_set_size, random_state=rng.stream(key, rng.G_SET), points=prepared["points"])
                    if g_set_size
                    else np.empty(0, dtype=np.int64)
                )
                ends = [b for b in budgets[:-1] if b <= len(start) or (b - len(start)) % round_size]
                if ends:
                    raise TailoredBenchError(
                        f"budget {ends[0]} is not the end of a round of {round_size} after {len(start)} items"
                    )
                largest = run[budgets[-1]]
                test = (largest.digest, start.tobytes())
                if test not in done:
                    done[test] = adaptive_tests(model, largest, budgets[-1], start, round_size)
                tests = done[test]
                for budget in budgets:
                    run[budget].ask_each(tests.items[:, :budget])
                out.append({"": {budget: tests.estimates(model, budget) for budget in budgets}})
        return out
