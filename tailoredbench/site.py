"""A static HTML site of the executed reports: a page per notebook, and an index with each one's takeaway.

``python -m tailoredbench.site`` (``make site``) writes ``site/``. nbconvert renders each page with its figures
embedded in it, so the folder opens from disk or from any static server, and the build downloads nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import atomic
from .batch import BENCHMARK_NOTEBOOKS, REPORTS, ROOT, STUDY_NOTEBOOKS, user_path
from .errors import TailoredBenchError

SITE = ROOT / "site"
#: The index's sections, in reading order; a report in none of them goes under "Other reports".
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start here", ("method_walkthrough", "tutorial_evaluate_your_model")),
    ("The paper's benchmarks", (*BENCHMARK_NOTEBOOKS, "main_table")),
    ("Beyond the paper", ("beyond", "sequential_precision", "suite")),
    ("Studies", STUDY_NOTEBOOKS),
)
#: The reading column: the width a notebook has in JupyterLab, so a table that fits there fits here.
COLUMN_PX = 1000
_TAKEAWAY = re.compile(r"^##\s+Takeaway\b.*$", re.MULTILINE)
_HEADING = re.compile(r"^#\s+(.+)$", re.MULTILINE)

# nbconvert's JupyterLab page, without require.js and mermaid (the reports use neither: no fetch for them),
# in a column of notebook width, with a way back to the index
_PAGE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}
<style type="text/css">
main { max-width: COLUMNpx; margin: 0 auto; padding: 0 16px 48px; box-sizing: border-box; }
nav.site { max-width: COLUMNpx; margin: 0 auto; padding: 12px 16px; box-sizing: border-box;
  font-family: var(--jp-ui-font-family); font-size: var(--jp-ui-font-size1); }
.jp-OutputArea-output img { max-width: 100%; height: auto; }
</style>
{%- endblock html_head_css -%}
{%- block body_header -%}
<body class="jp-Notebook" data-jp-theme-light="true" data-jp-theme-name="JupyterLab Light">
<nav class="site"><a href="index.html">&larr; All reports</a></nav>
<main>
{%- endblock body_header -%}
""".replace("COLUMN", str(COLUMN_PX))

_INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>tailoredbench reports</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5; color: #1f2328;
  max-width: {{ column }}px; margin: 0 auto; padding: 16px 16px 48px; }
h1 { margin-bottom: 0.2em; }
h2 { margin-top: 1.6em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { margin: 1em 0 0.2em; font-size: 1.1em; }
.name { color: #59636e; font-family: ui-monospace, monospace; font-size: 0.85em; font-weight: normal; }
.takeaway p { margin: 0.3em 0; }
</style>
<script type="text/x-mathjax-config">
MathJax.Hub.Config({tex2jax: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true}});
</script>
<script src="{{ mathjax_url }}"></script>
</head>
<body>
<main>
<h1>tailoredbench reports</h1>
<p>Each notebook executed into <code>reports/</code>: its takeaway, written from its own numbers, and a link to the
whole report with its tables and figures.</p>
{% for section, pages in sections %}
<h2>{{ section }}</h2>
{% for page in pages %}
<section class="report">
<h3><a href="{{ page.href }}">{{ page.title }}</a> <span class="name">{{ page.name }}</span></h3>
<div class="takeaway">{{ takeaways[page.name] | safe }}</div>
</section>
{% endfor %}
{% endfor %}
</main>
</body>
</html>
"""


@dataclass(frozen=True)
class Page:
    """One report on the site: its notebook's name, title and takeaway (Markdown)."""

    name: str
    title: str
    takeaway: str

    @property
    def href(self) -> str:
        return f"{self.name}.html"


def _markdown_outputs(cell) -> str:
    return "\n\n".join(
        output["data"]["text/markdown"]
        for output in cell.get("outputs", [])
        if output.get("output_type") in ("display_data", "execute_result") and "text/markdown" in output["data"]
    )


def takeaway(nb) -> str:
    """The Markdown under the notebook's "## Takeaway" heading: the text in the heading's own cell, else what
    the next cell shows (a code cell's Markdown output, or a Markdown cell); ``""`` without that heading.

    >>> import nbformat.v4 as v4
    >>> nb = v4.new_notebook(cells=[v4.new_markdown_cell("## Takeaway"), v4.new_code_cell("display(...)")])
    >>> nb.cells[1].outputs = [v4.new_output("display_data", {"text/markdown": "MAE **0.031**."})]
    >>> takeaway(nb)
    'MAE **0.031**.'
    """
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or not (heading := _TAKEAWAY.search(cell.source)):
            continue
        rest = re.split(r"^#", cell.source[heading.end() :], maxsplit=1, flags=re.MULTILINE)[0]
        if rest.strip():
            return rest.strip()
        if index + 1 == len(nb.cells):
            return ""
        following = nb.cells[index + 1]
        if following.cell_type == "code":
            return _markdown_outputs(following).strip()
        return "" if following.source.lstrip().startswith("#") else following.source.strip()
    return ""


def _title_and_intro(nb, name: str) -> tuple[str, str]:
    """The notebook's "# " title and the paragraph under it (what the index shows without a takeaway)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (heading := _HEADING.search(cell.source)):
            paragraphs = [p.strip() for p in cell.source[heading.end() :].split("\n\n") if p.strip()]
            return heading.group(1).strip(), paragraphs[0] if paragraphs else ""
    return name, ""


def reports(reports_dir: str | Path = REPORTS) -> list[Path]:
    """The executed notebooks ``<reports_dir>/<name>/<name>.ipynb``, in the index's order."""
    found = {path.parent.name: path for path in sorted(Path(reports_dir).glob("*/*.ipynb"))}
    found = {name: path for name, path in found.items() if path.stem == name and not name.startswith(".")}
    ordered = [name for _, names in SECTIONS for name in names if name in found]
    return [found[name] for name in ordered + sorted(set(found) - set(ordered))]


def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    # embed_images: a Markdown cell's image (figures/x.png) goes into the page, as the outputs' figures do
    page = "tailoredbench-page.html.j2"
    return HTMLExporter(
        template_name="lab", extra_loaders=[DictLoader({page: _PAGE})], template_file=page, embed_images=True
    )


def build(reports_dir: str | Path = REPORTS, site_dir: str | Path = SITE, log=print) -> Path:
    """Write ``<site_dir>/index.html`` and a page per executed report (:func:`reports`); returns the index.

    The site is built beside ``site_dir`` and replaces it whole, so a failed build leaves the last one."""
    import nbformat
    from jinja2 import Environment
    from nbconvert.filters import markdown2html

    notebooks = reports(reports_dir)
    if not notebooks:
        raise TailoredBenchError(f"no executed report in {reports_dir}: run `tailoredbench reproduce` first")
    site_dir = Path(site_dir)
    stage = site_dir.parent / f".{site_dir.name}.partial"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    exporter, pages = _exporter(), {}
    try:
        for path in notebooks:
            nb = nbformat.read(path, as_version=4)
            title, intro = _title_and_intro(nb, path.stem)
            page = Page(path.stem, title, takeaway(nb) or intro)
            resources = {"metadata": {"name": title, "path": str(path.parent)}}
            html, _ = exporter.from_notebook_node(nb, resources=resources)
            (stage / page.href).write_text(html, encoding="utf-8")
            pages[page.name] = page
            log(f"{page.href}: {title}")
        listed = {name for _, names in SECTIONS for name in names}
        sections = [(title, [pages[n] for n in names if n in pages]) for title, names in SECTIONS]
        sections.append(("Other reports", [page for name, page in pages.items() if name not in listed]))
        template = Environment(autoescape=True).from_string(_INDEX)
        index = template.render(
            sections=[(title, shown) for title, shown in sections if shown],
            # the notebooks' own Markdown, as HTML: the one text not escaped
            takeaways={name: markdown2html(page.takeaway) for name, page in pages.items()},
            column=COLUMN_PX,
            mathjax_url=exporter.mathjax_url,
        )
        (stage / "index.html").write_text(index, encoding="utf-8")
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    atomic.replace_folder(stage, site_dir)
    return site_dir / "index.html"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tailoredbench.site", description="Build a static HTML site of the executed reports."
    )
    parser.add_argument("--reports", default=REPORTS, type=Path, help="the reports' folder (default: reports/)")
    parser.add_argument("--output", default=SITE, type=Path, help="where the site goes (default: site/)")
    args = parser.parse_args(argv)
    try:
        index = build(args.reports, args.output)
    except TailoredBenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    shown = user_path(index)
    print(f"open {shown}, or serve it: python -m http.server -d {os.path.dirname(shown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
