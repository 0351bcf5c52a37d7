# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which inventory sources of a run did not parse (the lookup inventory_problems, the first play of
puls.proxmox.site). Ansible only warns about a source that no inventory plugin parses, and goes on without its hosts
(ansible/inventory/manager.py, InventoryManager.parse_source): a repository with one invalid manifest would then be a
green run on no hosts. So each source is parsed once more here, as parse_source parses it (a directory file by file,
with Ansible's ignore patterns; a file by each enabled plugin that accepts it), into an inventory that is thrown away,
and each source that no plugin parsed is named with the reasons the plugins gave."""

from __future__ import annotations

import os

import yaml
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.inventory.manager import IGNORED
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.loader import inventory_loader

MANIFESTS_PLUGIN = 'puls.proxmox.manifests'
# Ansible's own default source: parse_source says nothing when it is missing.
_DEFAULT_SOURCE = '/etc/ansible/hosts'


def inventory_problems(sources, loader):
    """One sentence per inventory source (or file of a directory source) that no plugin parsed."""
    problems = []
    for source in sources:
        if ',' in source and not os.path.exists(source):
            continue  # a host list (-i 'a,b,'), which the host_list plugin reads
        if not os.path.exists(source):
            if source != _DEFAULT_SOURCE:
                problems.append(f'inventory source {source} does not exist; correct the -i option or the inventory setting of ansible.cfg')
            continue
        problems.extend(problem for path in _files(source) if (problem := _file_problem(path, loader)))
    return problems


def refusal(problems):
    """The message that stops a run on the sources that did not parse: the lookup's, with its option fail (site.yml's
    first play under --limit), as roles/reconcile/tasks/inventory.yml words it in a task."""
    return (
        f'Nothing was read or written: {"; ".join(problems)}. Correct the inventory, then run again; a source that does not parse is '
        'never read as an empty fleet.'
    )


def _files(source):
    """The files Ansible reads of a source: the file itself, or a directory's files recursively, sorted, without those
    its ignore patterns leave out (hidden files, group_vars, host_vars, vars_plugins, the ignored extensions)."""
    if not os.path.isdir(source):
        yield source
        return
    for name in sorted(os.listdir(source)):
        if not IGNORED.search(name.encode()):
            yield from _files(os.path.join(source, name))


def _file_problem(path, loader):
    """Why no plugin parsed the file, or None when one did. A configuration of puls.proxmox.manifests is parsed by that
    plugin alone, whose error names the manifest file, the document and the field."""
    if _plugin_of(path) == MANIFESTS_PLUGIN:
        plugins = [inventory_loader.get(MANIFESTS_PLUGIN)]
    else:
        plugins = [plugin for plugin in (inventory_loader.get(name) for name in C.INVENTORY_ENABLED) if plugin]
    reasons = []
    for plugin in plugins:
        try:
            if not plugin.verify_file(path):
                continue
            plugin.parse(InventoryData(), loader, path, cache=False)
            return None
        except AnsibleError as error:
            reasons.append(_first_line(error.message))
        except Exception as error:  # a plugin's own fault, as parse_source catches it
            reasons.append(_first_line(to_text(error)))
    if not reasons:
        return f'inventory source {path}: no enabled inventory plugin reads this file; remove it from the inventory or enable its plugin'
    return f'inventory source {path} did not parse: ' + '; '.join(dict.fromkeys(reasons))


def _plugin_of(path):
    """The plugin a YAML inventory configuration names (its key plugin), or None."""
    if not path.endswith(('.yml', '.yaml')):
        return None
    try:
        with open(path, encoding='utf-8') as stream:
            data = yaml.safe_load(stream)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return data.get('plugin') if isinstance(data, dict) else None


def _first_line(message):
    return to_text(message).strip().splitlines()[0] if to_text(message).strip() else 'no reason given'
