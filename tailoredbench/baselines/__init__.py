"""Baselines that TailoredBench is compared with, one small module each.

Each module has the same two functions as :mod:`tailoredbench.tailored`
(``prepare`` and ``run``; see :mod:`tailoredbench.methods`), so the simulation runner,
the CLI and the notebooks treat every method alike, at the same budget.
"""

import numpy as np


def rng_for(key, budget: int, stream: int = 0) -> np.random.Generator:
    """The random stream of one (seed, run), budget and purpose.

    Random and random-regression share stream 0, so in a given run they see the same
    random items: a paired comparison.
    """
    return np.random.default_rng([*key, stream, budget])
