"""A local Sphinx extension: fixes so that the pages log no console errors and the API
reference reads cleanly.

- sphinx-thebe adds its inline configuration script (`const THEBE_JS_URL = ...`)
  to the builder once more than Sphinx >= 7.4 expects, so every page declares
  the constant twice and the browser logs a SyntaxError. Identical scripts
  are dropped from each page, keeping the first.
- pydata-sphinx-theme logs "Got invalid theme mode" on a reader's first visit
  when no default colour mode is configured; the default becomes "auto" (follow
  the reader's system), unless _config.yml sets one.

- typing.NamedTuple wraps the string annotations of a module with
  ``from __future__ import annotations`` (all of attnlib) in ``ForwardRef`` objects in
  the generated ``__new__``; Sphinx versions that do not unwrap them print
  ``ForwardRef('float')`` in the signature or the description of every result and
  settings class. Before autodoc reads a NamedTuple's signature, the ForwardRefs
  become their plain strings (``'float'``), which every version prints as written.

tools/check_html.py checks the result in a browser.
"""

import typing


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


def unwrap_forward_refs(obj) -> None:
    """Replace the ForwardRef annotations of a NamedTuple's ``__new__`` by their strings."""
    if not (isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")):
        return
    annotations = getattr(obj.__new__, "__annotations__", None) or {}
    for name, value in annotations.items():
        if isinstance(value, typing.ForwardRef):
            annotations[name] = value.__forward_arg__


def _before_signature(app, obj, bound_method):
    unwrap_forward_refs(obj)


def setup(app):
    app.connect("config-inited", _default_theme_mode)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.setup_extension("sphinx.ext.autodoc")  # defines the event connected below
    app.connect("autodoc-before-process-signature", _before_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
