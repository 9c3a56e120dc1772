"""The reports' tables and readings: pivoted, best first, errors that show, ties called ties, losses as losses."""

import re

import pandas as pd
import pytest

from tailoredbench import report

METHODS = ("tailoredbench", "random", "anchor_points", "gp_irt", "random_regression")


def summary(mae: dict, se: float = 0.0003, runs: int = 100, budgets=(20, 30, 40)) -> pd.DataFrame:
    """A benchmark summary: ``mae[method]`` at 30 items, the other budgets 0.01 apart around it."""
    rows = []
    for method, value in mae.items():
        for budget in budgets:
            rows.append(
                {
                    "method": method,
                    "budget": budget,
                    "mae": value + (30 - budget) / 1000,
                    "mae_se": se,
                    "kendall_tau": 0.9 - value,
                    "kendall_tau_se": 0.002,
                    "runs": runs,
                }
            )
    return pd.DataFrame(rows)


WIN = {"tailoredbench": 0.0314, "random": 0.0498, "anchor_points": 0.0695, "gp_irt": 0.0408}
WIN["random_regression"] = 0.0426


def plain(text):
    return text.replace("\u00a0", " ")  # cells keep "mean ± se" on one line with no-break spaces


def sentences(text):
    return re.split(r"(?<=\.) (?=[A-Z])", plain(text).strip())


def test_a_pivot_has_budgets_down_methods_across_best_first_and_errors_that_show():
    table = report.pivot(summary(WIN, se=0.0003)).map(lambda v: plain(v) if isinstance(v, str) else v)
    assert list(table.columns) == ["budget", "tailoredbench", "gp_irt", "random_regression", "random", "anchor_points"]
    assert list(table["budget"]) == [20, 30, 40]
    assert table.loc[1, "tailoredbench"] == "**0.0314** ± 0.0003"  # three decimals would print ± 0.000
    assert table.loc[1, "gp_irt"] == "0.0408 ± 0.0003"
    assert table.shape[1] <= 8


def test_a_mean_within_noise_of_the_best_is_bold_too():
    close = summary({**WIN, "gp_irt": 0.0318}, se=0.0003)
    table = report.pivot(close)
    assert table.loc[1, "gp_irt"].startswith("**0.0318**")  # 0.0004 apart, 2 s.e. of the difference is 0.00085
    assert not table.loc[1, "random"].startswith("**")


def test_standard_error_decimals():
    assert report.se_decimals([0.003, 0.004]) == 3
    assert report.se_decimals([0.0003, 0.0004]) == 4
    assert report.se_decimals([0.00003, 0.004]) == 4  # at most four: an error under 0.00005 prints as zero
    assert report.se_decimals([1e-18, 0.004]) == 3  # a mean that never moved has no error to show


def test_a_loss_is_a_loss_and_a_tie_a_tie():
    s = summary({**WIN, "tailoredbench": 0.0457})
    m = report.match(s, 30)
    assert (m.rival, m.outcome, m.change()) == ("gp_irt", "loss", "12% worse")
    far = report.match(summary({**WIN, "tailoredbench": 0.19}), 30)
    assert far.change() == "worse: 4.7× the MAE" and far.change(prose=True) == "4.7 times"
    tie = report.match(summary({**WIN, "tailoredbench": 0.0406}), 30)
    assert tie.outcome == "tie" and tie.change().startswith("tie (")


def test_the_takeaway_is_at_most_three_short_sentences_from_the_numbers():
    text = report.takeaway(summary(WIN), (0.041, 0.033))
    said = sentences(text)
    assert len(said) == 3 and max(map(len, said)) <= 300
    assert said[0] == (
        "At 30 items, over 100 runs, TailoredBench's MAE is 0.0314 ± 0.0003, 23% better than the best baseline's "
        "(gp_irt, 0.0408 ± 0.0003)."
    )
    assert "all 3 budgets" in said[1]
    # the paper's figure has no standard error: the gap is weighed by ours
    assert "no standard error" in said[2] and "0.0016 below its figure, 5.3 of our standard errors" in said[2]


def test_the_takeaway_of_a_run_without_tailoredbench_names_the_leader():
    text = report.takeaway(summary({m: v for m, v in WIN.items() if m != "tailoredbench"}))
    assert text.startswith("At 30 items, over 100 runs, the lowest MAE is gp_irt's")


def test_a_gap_within_the_papers_rounding_is_no_gap():
    text = report.paper_reading(summary({**WIN, "tailoredbench": 0.0333}), (0.041, 0.033))
    assert "0.0003 above the paper's, 1.0 of our standard errors: within our noise and the paper's rounding" in text


def main_table(per_benchmark: dict) -> pd.DataFrame:
    frames = [summary(mae).assign(benchmark=name) for name, mae in per_benchmark.items()]
    return pd.concat(frames, ignore_index=True)[["benchmark", *frames[0].columns[:-1]]]


PAPER = {"gsm8k": (0.041, 0.033), "winogrande": (0.038, 0.024), "hellaswag": (0.043, 0.018)}


@pytest.fixture
def table():
    return main_table(
        {
            "gsm8k": WIN,
            "winogrande": {**WIN, "tailoredbench": 0.0457},
            "hellaswag": {**WIN, "tailoredbench": 0.0406},
        }
    )


def test_the_paper_comparison_keeps_raw_numbers_and_shows_losses_as_losses(table):
    comparison = report.paper_comparison(table, PAPER)
    rows = comparison.set_index("benchmark")
    assert rows.loc["gsm8k", "verdict"] == "reproduced"
    assert rows.loc["winogrande", "verdict"] == "not reproduced (worse)"
    assert rows.loc["hellaswag", "verdict"] == "not reproduced (a tie)"
    assert rows.loc["gsm8k", "gap_to_paper"] == pytest.approx(0.0314 - 0.033)
    shown = report.comparison_table(comparison).set_index("benchmark")
    assert shown.loc["winogrande", "our change"] == "12% worse"
    assert shown.loc["gsm8k", "paper's change"] == "20% better"
    assert shown.shape[1] + 1 <= 8
    assert not any(str(v).startswith("-0.") or "-1" in str(v) for v in shown["our change"])


def test_the_main_takeaway_gives_a_verdict_per_benchmark(table):
    said = sentences(report.main_takeaway(table, 30, PAPER))
    assert said[0] == (
        "At 30 items, against the paper's baselines, TailoredBench has a lower MAE than each of them on GSM8K "
        "(at all 3 budgets), ties the best of them on HellaSwag and is worse on Winogrande (12% worse than gp_irt's)."
    )
    assert said[1] == (
        "Set beside the paper's gain over its best baseline, its gain over the paper's baselines is reproduced on "
        "GSM8K and not reproduced on Winogrande and HellaSwag."
    )
    assert len(said) == 3


def test_the_benchmark_by_method_table_sets_the_paper_beside_ours(table):
    shown = report.at_budget(table, 30, paper=PAPER)
    assert list(shown["benchmark"]) == ["gsm8k", "winogrande", "hellaswag"]
    assert shown.columns[-1] == "paper: best baseline → TailoredBench"
    assert shown.iloc[0, -1] == "0.041 → 0.033"
    assert shown.shape[1] <= 8


def test_written_tables_keep_the_raw_columns_and_pivot_the_readable_ones(tmp_path, table):
    report.write_tables(table, tmp_path, "main_table")
    raw = pd.read_csv(tmp_path / "main_table.csv")
    assert list(raw.columns) == list(table.columns)
    md = (tmp_path / "main_table.md").read_text()
    assert "**winogrande: MAE, 100 runs**" in md and "**hellaswag: Kendall's tau, 100 runs**" in md
    assert len(re.findall(r"\| +budget \| +tailoredbench +\| +gp_irt +\|", md)) == 6  # one column order throughout
    tex = (tmp_path / "main_table.tex").read_text()
    assert r"random\_regression" in tex and r"\textbf{" in tex


def test_the_main_takeaway_names_a_later_baseline_that_beats_tailoredbench():
    table = summary({**WIN, "fluid": 0.0200}).assign(benchmark="gsm8k")  # fluid is no paper baseline
    said = sentences(report.main_takeaway(table, 30, {"gsm8k": (0.041, 0.033)}))
    assert said[0].startswith("At 30 items, against the paper's baselines, TailoredBench has a lower MAE")
    assert said[1].endswith("; fluid, which the paper does not run, has a lower MAE on GSM8K (0.0200).")
    assert len(said) == 3


def test_the_main_takeaway_says_at_which_budgets_a_win_holds():
    only_at_30 = summary(WIN)
    # at 20 and 40 items gp_irt is clearly lower: the win at 30 is not a win everywhere
    only_at_30.loc[(only_at_30["method"] == "gp_irt") & (only_at_30["budget"] != 30), "mae"] = 0.01
    table = pd.concat([summary(WIN).assign(benchmark="gsm8k"), only_at_30.assign(benchmark="hellaswag")])
    first = sentences(report.main_takeaway(table, 30))[0]
    assert "GSM8K (at all 3 budgets)" in first
    assert "HellaSwag (at 30 items only: it beats every baseline at 1 and trails" in first


def test_a_gap_the_papers_rounding_explains_is_not_counted_in_standard_errors():
    # Winogrande: 0.0247 ± 0.0001 against the paper's 0.024 is 7 s.e., but within the paper's rounding
    near = summary({**WIN, "tailoredbench": 0.0247}, se=0.0001)
    text = plain(report.takeaway(near, (0.038, 0.024)))
    assert (
        "0.0007 above its figure: within our noise and the paper's rounding, the rounding (±0.0005) the larger part"
        in text
    )
    assert "s.e." not in text and "of our standard errors" not in text
    table = near.assign(benchmark="winogrande")
    shown = report.comparison_table(report.paper_comparison(table, {"winogrande": (0.038, 0.024)}))
    assert shown["ours − paper's"].iloc[0] == "+0.0007 (within the paper's ±0.0005 rounding + 2 s.e.)"


def test_a_standard_error_that_rounds_to_zero_shows_its_bound():
    assert plain(report.cell(0.0111, 1.8e-5, 4)) == "0.0111 ± < 0.00005"
    assert plain(report.cell(0.0123, 2e-18, 4)) == "0.0123 ± 0"  # the same in every run
    assert plain(report.cell(0.0140, 5.9e-5, 4)) == "0.0140 ± 0.0001"
    assert report.cell(0.0111, 1.8e-5, 4, style="latex") == r"0.0111 $\pm$ $<$ 0.00005"


def test_the_provenance_keeps_each_cell_short_enough_to_wrap():
    files = [
        {"repo": "owner/data", "commit": "6d394c9abc", "path": f"a/b/c/answers/{n}.jsonl", "sha256": "f" * 64}
        for n in ("llava-v1.5-13b", "llava-v1.5-7b")
    ]
    long = "llava_loraft_dpo_our_ocrlv8kfilter4k_diffu800_textvqa8kfilter6k_diffu800_r1024_a2048"
    files.append({"repo": "o/seva", "commit": "a369420", "path": f"pope_result/{long}/pope.jsonl", "sha256": "0" * 64})
    record = {
        "benchmark": {"files": files, "n_source": 5, "n_target": 5, "n_items": 10},
        "parameters": {"runs": 1, "seed": 0, "n_jobs": 1},
        "package_version": "0",
        "git_commit": "x",
        "environment": {},
    }
    rows = report.provenance(record)
    assert list(rows["value"][:3]) == [
        "`owner/data@6d394c9/a/b/c/answers/`",
        "`llava-v1.5-13b.jsonl` (sha256 ffffffffffff…, checked)",
        "`llava-v1.5-7b.jsonl` (sha256 ffffffffffff…, checked)",
    ]
    assert rows["value"][3] == "`o/seva@a369420/pope_result/llava_loraft_dpo_our_ocr…u800_r1024_a2048/`"


def test_with_few_targets_the_tau_jumps_are_read_from_the_runs():
    # POPE's gp-IRT: the same tau in (nearly) every run, 0.2 apart per pair of its 5 targets
    per_run = pd.DataFrame(
        {
            "method": ["gp_irt"] * 6 + ["random"] * 6,
            "budget": [20, 20, 25, 25, 30, 30] * 2,
            "kendall_tau": [0.8, 0.8, 1.0, 1.0, 0.4, 0.4, 0.2, 0.4, 0.2, 0.4, 0.4, 0.2],
        }
    )
    summary = per_run.groupby(["method", "budget"], as_index=False)["kendall_tau"].mean()
    text = report.tau_steps_reading(summary, per_run, 5)
    assert text.startswith("gp_irt's tau moves most from budget to budget")
    assert "1.0 (100% of runs) at 25 items" in text and "moves it by 0.2" in text
    assert report.tau_steps_reading(summary, per_run, 150) == ""  # many targets: no steps to explain


def test_the_paper_is_compared_with_the_paper_s_baselines_only():
    # fluid is not in the paper: the takeaway may name it, the comparison with the paper may not
    with_fluid = summary({**WIN, "fluid": 0.0300}).assign(benchmark="gsm8k")
    assert report.match(with_fluid, 30).rival == "fluid"
    row = report.paper_comparison(with_fluid, {"gsm8k": (0.041, 0.033)}).iloc[0]
    assert row["our_best_baseline"] == "gp_irt"
    assert "our best of the paper's baselines, gp_irt" in report.paper_reading(with_fluid, (0.041, 0.033))


def test_a_later_method_is_named_beside_the_paper_s_baselines_never_as_one_of_them():
    with_fluid = summary({**WIN, "fluid": 0.0214})
    said = report.takeaway(with_fluid)
    assert "best paper baseline's (gp_irt" in said and "; fluid, from after the paper, has 0.0214" in said


def test_the_tau_reading_counts_pairs_in_order_against_and_level_where_estimates_tie():
    # SYNTHETIC: five targets; "flat" gives four of them one estimate, as fluid does on POPE
    summary = pd.DataFrame(
        {
            "method": ["flat", "good"],
            "budget": 30,
            "kendall_tau": [-0.6325, 1.0],
            "kendall_tau_se": [0.0, 0.0],
        }
    )
    true = [0.70, 0.72, 0.74, 0.76, 0.78]
    results = pd.DataFrame(
        {
            "method": ["flat"] * 5 + ["good"] * 5,
            "budget": 30,
            "run": 0,
            "true": true * 2,
            "estimate": [0.737, 0.737, 0.737, 0.737, 0.727, *true],
        }
    )
    text = report.tau_reading(summary, results)
    assert "put 0% of the pairs of targets in the right order, 40% in the wrong one and 60% level" in text
    assert "of the time" not in text  # the no-ties reading is not given where ties are counted
