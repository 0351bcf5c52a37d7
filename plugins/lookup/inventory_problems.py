# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: inventory_problems
short_description: The inventory sources of this run that no inventory plugin parsed, and why
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - Ansible only warns about an inventory source that no inventory plugin parses, and goes on without its hosts. This
    lookup parses each source once more, as Ansible does (a directory file by file, with its ignore patterns), into an
    inventory that is thrown away, and returns one sentence for each source or file that no plugin parsed.
  - >-
    A configuration of P(puls.proxmox.manifests#inventory) is parsed by that plugin alone, so the sentence names the
    manifest file, the document and the field, for example
    C(inventory source inventory/cluster.proxmops.yml did not parse: proxmox/vms/web-01.yaml (document 1): spec.cores
    must be a positive integer, got 'two').
  - The first play of C(puls.proxmox.site) fails the run with these sentences before anything is read or written.
  - With O(fail), the lookup fails itself when a source did not parse, with the message the first play gives. Under
    C(--limit), C(puls.proxmox.site) asks it so where Ansible resolves the first play's hosts, before any play runs.
options:
  _terms:
    description: The inventory sources, as the magic variable C(ansible_inventory_sources) lists them.
    type: list
    elements: str
    required: true
  fail:
    description: Fail, naming every source that did not parse, instead of returning the sentences.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Stop when an inventory source did not parse
  ansible.builtin.fail:
    msg: "{{ problems | join('; ') }}"
  when: problems | length > 0
  vars:
    problems: "{{ query('puls.proxmox.inventory_problems', *ansible_inventory_sources) }}"

- name: Fail at once when an inventory source did not parse
  ansible.builtin.debug:
    msg: "{{ query('puls.proxmox.inventory_problems', *ansible_inventory_sources, fail=true) }}"
'''

RETURN = r'''
_raw:
  description:
    - One sentence per inventory source, or file of a directory source, that did not parse; empty when all did.
    - With O(fail), always empty (the lookup fails otherwise).
  type: list
  elements: str
'''

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.puls.proxmox.plugins.plugin_utils._inventory_check import inventory_problems, refusal


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        problems = inventory_problems([str(term) for term in terms], self._loader)
        if problems and self.get_option('fail'):
            raise AnsibleError(refusal(problems))
        return problems
