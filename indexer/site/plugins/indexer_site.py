"""datasette --plugins-dir entry: the hooks live in the package (indexer.site.hooks)."""

from indexer.site.hooks import (  # noqa: F401 - pluggy registers the hookimpls found on this module
    extra_body_script,
    extra_css_urls,
    extra_template_vars,
    menu_links,
    prepare_connection,
    prepare_jinja2_environment,
    register_routes,
    render_cell,
    startup,
)
