"""docs/index.md's inventory reference is the reconcile role's argument spec (entry point main), so the docs
cannot drift from what the role validates. After changing roles/reconcile/meta/argument_specs.yml, regenerate the
table with: make generate (or .venv/bin/python tests/unit/test_docs_inventory_reference.py)"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / 'roles' / 'reconcile' / 'meta' / 'argument_specs.yml'
DOC = REPO / 'docs' / 'index.md'
START = '<!-- inventory-reference: generated from roles/reconcile/meta/argument_specs.yml (main) -->'
END = '<!-- end of inventory-reference -->'
MARKUP = re.compile(r'\b([A-Z])\(([^)]*)\)')


def plain(markup):
    """Ansible doc markup as Markdown: C(x), V(x), O(x), E(x) as code; O(plugin#module:option) as the option."""

    def code(match):
        value = match.group(2)
        if '#' in value:
            plugin, _sep, rest = value.partition('#')
            value = rest.partition(':')[2] or plugin
        return f'`{value}`'

    return MARKUP.sub(code, markup).replace('|', '\\|')


def type_of(spec):
    kind = spec.get('type', 'str')
    return '{0} of {1}'.format(kind, spec['elements']) if kind == 'list' and 'elements' in spec else kind


def default_of(spec):
    if 'default' not in spec:
        return ''
    default = spec['default']
    if isinstance(default, bool):
        text = str(default).lower()
    elif isinstance(default, str):
        text = default or '""'
    else:
        text = json.dumps(default)
    return f'`{text}`'


def rows(options, prefix=''):
    for name, spec in options.items():
        description = spec.get('description', '')
        text = ' '.join(description if isinstance(description, list) else [description])
        if spec.get('choices'):
            text += ' One of {0}.'.format(', '.join(f'`{c}`' for c in spec['choices']))
        if spec.get('required'):
            text += ' Required.'
        yield f'| `{prefix}{name}` | {type_of(spec)} | {default_of(spec)} | {plain(text)} |'
        if spec.get('options'):
            # A list's entries are NAME[].KEY, a dict's keys NAME.KEY.
            yield from rows(spec['options'], prefix=f"{prefix}{name}{'[]' if spec.get('type') == 'list' else ''}.")


def reference_table(options=None):
    if options is None:
        options = yaml.safe_load(SPECS.read_text())['argument_specs']['main']['options']
    ordered = dict(sorted(options.items()))
    return '\n'.join(['| variable | type | default | meaning |', '|---|---|---|---|'] + list(rows(ordered)))


def documented(options=None):
    """docs/index.md with the reference of ``options`` (default: argument_specs.yml's), as make generate writes it."""
    text = DOC.read_text()
    return text[: text.index(START) + len(START)] + '\n' + reference_table(options) + '\n' + text[text.index(END) :]


def documented_table():
    text = DOC.read_text()
    return text[text.index(START) + len(START) : text.index(END)].strip()


def test_the_inventory_reference_in_the_docs_is_the_role_argument_spec():
    assert documented_table() == reference_table(), (
        'docs/index.md is out of date with the argument spec; run: .venv/bin/python tests/unit/test_docs_inventory_reference.py'
    )


def test_every_variable_the_role_validates_has_a_row_with_a_meaning():
    options = yaml.safe_load(SPECS.read_text())['argument_specs']['main']['options']
    documented = dict(re.findall(r'^\| `([^`]+)` \|[^|]*\|[^|]*\| (.*) \|$', documented_table(), re.M))
    assert set(options) <= set(documented)
    assert all(meaning.strip() for meaning in documented.values())


if __name__ == '__main__':
    DOC.write_text(documented())
    sys.exit(0)
