"""The reports' static site (``make site``), seen in a real browser; and executed notebooks that open unmodified.

The browser is Debian's Chromium, driven by playwright: every page linked from the index loads, shows every image
and keeps every table inside its column.
"""

import base64
import io
import json
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest
from nbformat import v4

from conftest import ROOT
from tailoredbench import batch, site
from tailoredbench.errors import TailoredBenchError

CHROMIUM = Path("/usr/bin/chromium")
# headless, and nothing fetched behind the page's back (updates, sync, first-run pages)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",  # a container's small /dev/shm can crash a page, and a crashed page answers nothing
]


def _png() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([20, 30, 40], [0.04, 0.035, 0.03])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _table(columns: int) -> str:
    header = "| budget | " + " | ".join(f"method number {c}" for c in range(columns - 1)) + " |"
    rows = ["|" + "---|" * columns, "| 30 | " + " | ".join("0.0412 ± 0.0008" for _ in range(columns - 1)) + " |"]
    return "\n".join([header, *rows])


def _report(folder: Path, name: str, cells: list) -> None:
    """An executed notebook as reproduce writes it: ``<folder>/<name>/<name>.ipynb``."""
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3 (ipykernel)"}
    (folder / name).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name / f"{name}.ipynb")


def _shown(cell, data: dict):
    cell.outputs = [v4.new_output("display_data", data)]
    return cell


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """Three small reports: a takeaway shown by a code cell, one written in its heading's cell, and none."""
    folder, png = tmp_path_factory.mktemp("reports"), _png()
    _report(
        folder,
        "method_walkthrough",
        [
            v4.new_markdown_cell("# The method, step by step\n\nFour steps on GSM8K."),
            v4.new_markdown_cell("## Takeaway"),
            _shown(v4.new_code_cell("display(Markdown(text))"), {"text/markdown": "MAE **0.0312** at 30 items."}),
            v4.new_markdown_cell("## Results\n\n![curve](figures/curve.png)"),
            _shown(v4.new_code_cell("figure"), {"image/png": png, "text/plain": "<Figure>"}),
            _shown(v4.new_code_cell("table"), {"text/markdown": _table(8), "text/plain": "table"}),
        ],
    )
    (folder / "method_walkthrough" / "figures").mkdir()
    (folder / "method_walkthrough" / "figures" / "curve.png").write_bytes(base64.b64decode(png))
    _report(
        folder,
        "study_new",
        [v4.new_markdown_cell("# A new study"), v4.new_markdown_cell("## Takeaway\n\nThe G-set of 10 is a tie.")],
    )
    _report(folder, "gsm8k", [v4.new_markdown_cell("# GSM8K\n\nEvery method on GSM8K.\n\nMore text.")])
    _report(folder, ".gsm8k.partial", [v4.new_markdown_cell("# half written")])  # a run in progress: not shown
    return folder


def test_the_takeaway_is_what_follows_its_heading():
    code = _shown(v4.new_code_cell("display(...)"), {"text/markdown": "Ours **0.031**.", "text/plain": "x"})
    assert site.takeaway(v4.new_notebook(cells=[v4.new_markdown_cell("## Takeaway"), code])) == "Ours **0.031**."
    cells = [v4.new_markdown_cell("## Takeaway\n\nWritten here.\n\n## Results\n\nNot this.")]
    assert site.takeaway(v4.new_notebook(cells=cells)) == "Written here."
    cells = [v4.new_markdown_cell("## Takeaway"), v4.new_markdown_cell("The next cell.")]
    assert site.takeaway(v4.new_notebook(cells=cells)) == "The next cell."
    cells = [v4.new_markdown_cell("## Takeaway"), v4.new_markdown_cell("## Results")]
    assert site.takeaway(v4.new_notebook(cells=cells)) == ""
    assert site.takeaway(v4.new_notebook(cells=[v4.new_markdown_cell("# Title")])) == ""


def test_the_index_lists_every_report_with_its_takeaway_and_a_link(reports, tmp_path):
    lines = []
    index = site.build(reports, tmp_path / "site", log=lines.append)
    assert index == tmp_path / "site" / "index.html"
    assert sorted(p.name for p in index.parent.iterdir()) == [
        "gsm8k.html",
        "index.html",
        "method_walkthrough.html",
        "study_new.html",
    ]
    html = index.read_text()
    # in the index's order: its sections first, then the reports it does not know
    assert html.index("method_walkthrough.html") < html.index("gsm8k.html") < html.index("study_new.html")
    assert "MAE <strong>0.0312</strong> at 30 items." in html  # the code cell's Markdown, rendered
    assert "The G-set of 10 is a tie." in html
    assert "Every method on GSM8K." in html and "More text." not in html  # no takeaway: the introduction
    assert "half written" not in html and len(lines) == 3
    page = (index.parent / "method_walkthrough.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2  # the output's figure and the Markdown cell's
    assert 'href="index.html"' in page and "<title>The method, step by step</title>" in page


def test_the_site_is_replaced_whole_and_needs_reports(reports, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "gone.html").write_text("from an older build")
    site.build(reports, tmp_path / "site", log=lambda line: None)
    assert not (tmp_path / "site" / "gone.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no staging folder left
    with pytest.raises(TailoredBenchError, match="no executed report"):
        site.build(tmp_path / "empty", tmp_path / "other")
    assert not (tmp_path / "other").exists()


# --- in a real browser -------------------------------------------------------------------------------------------

MEASURE = """() => ({
    title: document.title,
    images: [...document.images].map(i => ({alt: i.alt, width: i.naturalWidth})),
    tables: [...document.querySelectorAll("table")].map(t => ({
        header: t.rows[0] ? t.rows[0].innerText.slice(0, 60) : "",
        width: t.scrollWidth,
        room: t.parentElement.clientWidth,
    })),
})"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (Debian: apt-get install --no-install-recommends chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="no playwright: pip install -e '.[test]'")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def visit(browser, index: Path) -> tuple[dict, list, list]:
    """Open the index and every page it links to at a laptop's width; each page's measures, the requests that
    left the site (refused) and the script errors."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    left, errors = [], []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("crash", lambda crashed: errors.append(f"crashed: {crashed.url}"))

    def route(request_route):
        if request_route.request.url.startswith(("file:", "data:")):
            request_route.continue_()
        else:
            left.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.goto(index.as_uri(), wait_until="load")
    measures = {"index.html": page.evaluate(MEASURE)}
    links = page.eval_on_selector_all("main a[href$='.html']", "links => links.map(a => a.href)")
    for link in links:
        page.goto(link, wait_until="load")
        measures[Path(urlparse(link).path).name] = page.evaluate(MEASURE)
    page.close()
    return measures, left, errors


def _overflowing(measure: dict) -> list[dict]:
    return [table for table in measure["tables"] if table["width"] > table["room"]]


@pytest.mark.slow
def test_every_page_loads_shows_its_images_and_keeps_its_tables_in_the_column(browser, reports, tmp_path):
    index = site.build(reports, tmp_path / "site", log=lambda line: None)
    measures, left, errors = visit(browser, index)
    assert sorted(measures) == ["gsm8k.html", "index.html", "method_walkthrough.html", "study_new.html"]
    assert measures["method_walkthrough.html"]["title"] == "The method, step by step"
    images = measures["method_walkthrough.html"]["images"]
    assert len(images) == 2 and all(image["width"] > 0 for image in images), images
    assert len(measures["method_walkthrough.html"]["tables"]) == 1
    assert not [name for name, measure in measures.items() if _overflowing(measure)]
    assert not errors
    # the one thing fetched from outside: MathJax, which typesets the equations (offline they stay LaTeX)
    assert {urlparse(url).path.rsplit("/", 1)[-1] for url in left} <= {"latest.js"}, left

    # a table too wide for the column is caught
    _report(reports, "study_wide", [_shown(v4.new_code_cell("t"), {"text/markdown": _table(20), "text/plain": "t"})])
    try:
        measures, _, _ = visit(browser, site.build(reports, tmp_path / "wide", log=lambda line: None))
    finally:
        (reports / "study_wide" / "study_wide.ipynb").unlink()
        (reports / "study_wide").rmdir()
    assert _overflowing(measures["study_wide.html"])


@pytest.fixture(scope="module")
def committed(browser, tmp_path_factory):
    """The committed reports' site, measured in the browser."""
    index = site.build(ROOT / "reports", tmp_path_factory.mktemp("site") / "site", log=lambda line: None)
    return visit(browser, index)


@pytest.mark.slow
def test_every_committed_report_loads_and_shows_every_figure(committed):
    measures, _, errors = committed
    names = {path.stem for path in site.reports(ROOT / "reports")}
    assert set(measures) == {"index.html"} | {f"{name}.html" for name in names}
    blank = {name: m["images"] for name, m in measures.items() if any(i["width"] == 0 for i in m["images"])}
    assert not blank and not errors
    assert all(m["images"] for name, m in measures.items() if name != "index.html")  # every report has a figure


@pytest.mark.slow
@pytest.mark.parametrize("name", [path.stem for path in site.reports(ROOT / "reports")])
def test_no_committed_report_has_a_table_wider_than_its_column(committed, name):
    measures, _, _ = committed
    assert not _overflowing(measures[f"{name}.html"]), measures[f"{name}.html"]["tables"]


# --- executed notebooks open unmodified ---------------------------------------------------------------------------


def _kernel_display_name() -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    return KernelSpecManager().get_kernel_spec("python3").display_name


def test_normalised_gives_the_kernels_own_kernelspec_in_nbformats_layout():
    nb = v4.new_notebook(cells=[v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    raw = json.loads(nbformat.writes(nb))
    text = json.dumps(raw, indent=2)  # another writer's layout
    once = batch.normalised(text)
    assert json.loads(once)["metadata"]["kernelspec"]["display_name"] == _kernel_display_name()
    assert batch.normalised(once) == once and once.endswith("}\n") and not once.endswith("\n\n")


@pytest.mark.slow
@pytest.mark.notebook
def test_an_executed_notebook_round_trips_unchanged_through_nbformat(tmp_path):
    """JupyterLab saves a notebook through nbformat: one that nbformat would write differently, or whose kernelspec
    differs from the running kernel's, opens already marked modified."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    parameters = v4.new_code_cell("output_dir = 'out'")
    parameters.metadata["tags"] = ["parameters"]
    nb.cells = [v4.new_markdown_cell("# Tiny"), parameters, v4.new_code_cell("print('ran')")]
    nbformat.write(nb, notebooks / "tiny.ipynb")
    [path] = batch.reproduce(["tiny"], notebooks_dir=notebooks, output_dir=tmp_path / "reports", log=lambda line: None)
    text = path.read_text()
    executed = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    nbformat.validate(executed)
    assert nbformat.writes(executed) + "\n" == text
    assert (executed.nbformat, executed.nbformat_minor) == (nbformat.current_nbformat, nbformat.current_nbformat_minor)
    assert all(cell.get("id") for cell in executed.cells)
    assert executed.metadata.kernelspec.display_name == _kernel_display_name()
    assert executed.cells[-1].outputs[0].text == "ran\n"
