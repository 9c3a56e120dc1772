"""The method walkthrough's helpers: each table is the step it lays out, and every row is the four steps' answer."""

import numpy as np
import pandas as pd
import pytest

from tailoredbench import walkthrough
from tailoredbench.datasets.synthetic import synthetic_2pl
from tailoredbench.tailored import calibrated_estimate, g_set, n_set, native_sources


def test_the_tiny_matrix_is_seeded_and_its_embedding_standardises_each_source_row():
    toy = walkthrough.toy_matrix()
    assert toy.equals(walkthrough.toy_matrix()) and not toy.equals(walkthrough.toy_matrix(seed=1))
    assert set(np.unique(toy.to_numpy())) <= {0, 1}
    embedded = walkthrough.item_embedding(toy.drop(index="T"))
    assert list(embedded.index) == list(toy.columns) and list(embedded.columns) == list(toy.index[:-1])
    varying = toy.drop(index="T").std(axis=1) > 0
    assert np.allclose(embedded.mean(axis=0), 0.0)
    assert np.allclose(embedded.std(axis=0, ddof=0)[varying.to_numpy()], 1.0)


def test_the_item_table_averages_to_the_calibrated_estimate():
    toy = walkthrough.toy_matrix()
    source, answers = toy.drop(index="T").to_numpy(dtype=float), toy.loc["T"].to_numpy(dtype=float)
    g = g_set(source, walkthrough.TOY_G_SIZE, random_state=0)
    _, nearest = native_sources(source[:, g], answers[None, g])
    probe = n_set(source, nearest[0], g, walkthrough.TOY_BUDGET, random_state=0)
    mean = source[nearest[0]].mean(axis=0)
    by_item = walkthrough.estimate_by_item(mean, probe, answers[probe.items], toy.columns)
    assert by_item["item estimate"].mean() == pytest.approx(calibrated_estimate(mean, probe, answers[probe.items]))
    members = walkthrough.cluster_members(toy.columns, probe.items, probe.labels)
    assert members["size"].sum() == toy.shape[1]
    table, threshold = walkthrough.distances_to_sources(toy.index[:-1], source[:, g], answers[g], nearest[0])
    assert set(table.index[table["native"]]) == set(toy.index[nearest[0]])
    assert table.loc[table["native"], "distance"].max() <= threshold


def test_every_row_is_what_the_four_steps_give_one_target_alone():
    bench = synthetic_2pl(30, 80, seed=3)
    source, targets = bench.source.values, bench.target.values
    runs = walkthrough.every_target(source, targets, g_size=4, budgets=[10, 14], seeds=[0, 1])
    assert len(runs) == 2 * 2 * len(targets)
    row = runs[(runs["seed"] == 1) & (runs["budget"] == 14) & (runs["target"] == 5)].iloc[0]
    answers = targets[5]
    g = g_set(source, 4, random_state=1)
    _, nearest = native_sources(source[:, g], answers[None, g])
    probe = n_set(source, nearest[0], g, 14, random_state=1)
    results = answers[probe.items]
    assert row["estimate"] == calibrated_estimate(source[nearest[0]].mean(axis=0), probe, results)
    assert row["probe_mean"] == results.mean() and row["truth"] == answers.mean()
    quality = walkthrough.quality(runs)
    assert set(quality["estimate"]) == set(walkthrough.ESTIMATES.values()) and set(quality["runs"]) == {2}
    together = walkthrough.every_target(source, targets, g_size=4, budgets=[10], seeds=[0], together=True)
    assert together["n_native"].nunique() == 1


def test_the_random_sample_baseline_is_seeded_and_exact_when_it_draws_every_item():
    targets = (np.random.default_rng(0).random((6, 40)) < 0.5).astype(float)
    first = walkthrough.random_sample(targets, budgets=[10, 40], seeds=[0, 1])
    again = walkthrough.random_sample(targets, budgets=[10, 40], seeds=[0, 1])
    pd.testing.assert_frame_equal(first, again)
    everything = first.set_index("budget").loc[40]
    assert everything["mae"] == 0 and everything["runs"] == 2
    assert first.set_index("budget").loc[10, "mae"] > 0
