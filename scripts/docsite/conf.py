# Sphinx configuration of the collection's docs site, built by scripts/docs:
# antsibull-docs writes the RST of every module, filter and role, Sphinx makes HTML of it.
# Made from `antsibull-docs sphinx-init`; the difference: no intersphinx. The build runs
# without network access, so references to pages of docs.ansible.com (other collections'
# modules such as ansible.builtin.copy, "common return values") stay plain text; a
# reference into this collection that does not resolve still fails the build.

project = 'aiinfra.fabric'
copyright = 'aiinfra.fabric developers'
title = 'aiinfra.fabric documentation'
html_short_title = 'aiinfra.fabric'

extensions = ['sphinx_antsibull_ext']

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

default_role = 'any'


OWN_LABELS = 'ansible_collections.aiinfra.fabric.'


def _outside_reference_as_text(app, env, node, contnode):
    """A reference to a label of another docs site (no intersphinx here): its text, unlinked."""
    if node.get('refdomain') == 'std' and node.get('reftype') == 'ref' \
            and not node.get('reftarget', '').startswith(OWN_LABELS):
        return contnode
    return None


def setup(app):
    app.connect('missing-reference', _outside_reference_as_text)
