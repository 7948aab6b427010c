"""A local Sphinx extension: two fixes so that the pages log no console errors.

- sphinx-thebe adds its inline configuration script (`const THEBE_JS_URL = ...`)
  to the builder once more than Sphinx >= 7.4 expects, so every page declares
  the constant twice and the browser logs a SyntaxError. Identical scripts
  are dropped from each page, keeping the first.
- pydata-sphinx-theme logs "Got invalid theme mode" on a reader's first visit
  when no default colour mode is configured; the default becomes "auto" (follow
  the reader's system), unless _config.yml sets one.

tools/check_html.py checks the result in a browser.
"""


def _script_key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    filename = getattr(script, "filename", str(script)) or ""  # None and "" both mean inline
    return (str(filename), tuple(sorted(attributes.items())))


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept


def _default_theme_mode(app, config):
    config.html_context = {"default_mode": "auto", **(config.html_context or {})}


def setup(app):
    app.connect("config-inited", _default_theme_mode)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
