"""A local Sphinx extension for the print edition (`make pdf`, the LaTeX builder).

On the web pages a cell tagged ``hide-input`` (or ``hide-cell``) shows a
collapsed "Show code cell source" button; paper has no buttons, so the LaTeX
builder would print the plumbing in full. For LaTeX builds this extension drops
the source of those cells and keeps their outputs (figures, printed numbers);
cells tagged ``remove-cell`` or ``remove-input`` are already left out by
myst-nb. The HTML builds are untouched.
"""

from docutils import nodes

HIDDEN_SOURCE_TAGS = ("hide-input", "hide-cell")


def _tags(cell) -> set[str]:
    tags = cell.get("cell_metadata", {}).get("tags", [])
    return set(tags) | {c[len("tag_") :] for c in cell.get("classes", []) if c.startswith("tag_")}


def _drop_hidden_sources(app, doctree, docname):
    if app.builder.format != "latex":
        return
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code" or not _tags(cell) & set(HIDDEN_SOURCE_TAGS):
            continue
        for child in list(cell.children):
            if isinstance(child, nodes.container) and child.get("nb_element") == "cell_code_source":
                cell.remove(child)


def setup(app):
    app.connect("doctree-resolved", _drop_hidden_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
