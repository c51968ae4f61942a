"""A Sphinx extension for the book (named in _config.yml): MathJax on every page.

Sphinx adds MathJax only to pages with math of their own, but chapter titles with math appear in
every page's navigation sidebar; without MathJax there they would show as raw TeX.
"""


def setup(app):
    app.set_html_assets_policy("always")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
