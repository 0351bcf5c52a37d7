# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: vm_options
short_description: A machine's module options from its pve_* variables, as the reconcile role maps them
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - The options the C(puls.proxmox.reconcile) role gives P(puls.proxmox.pve_vm#module), from the host's C(pve_*) variables
    (role defaults, inventory, task variables), by the collection's one declaration of each VM option. A variable that is
    not defined gives no option, so that pve_vm leaves that setting alone.
  - The role's special cases are kept. C(state) comes from C(pve_power). The cloud-init user (C(pve_ssh_user)) is written
    only with keys or a password, and neither it nor the keys with C(pve_user_data), which brings its own users.
  - Also the options the role gives P(puls.proxmox.pve_container#module) (C(pve_container) and what the role declares
    for every machine) and P(puls.proxmox.pve_notes_hash#module) (the provision files), from the same code the role's
    pre-flight builds every machine's options with (P(puls.proxmox.fleet_vars#module)).
  - Returns one dict per term. The result holds the machine's secrets (C(ci_password), C(user_data)); keep it out of the
    output (C(no_log)).
options:
  _terms:
    description:
      - What the options are for. V(machine) - pve_vm's options of a declared machine. V(build) - those of a template's
        build VM, before the bake's own (name, state, VMID, tags, a temporary key). V(template_spec) - what enters a
        template's spec hash, keyed by variable name without C(pve_). V(container) - pve_container's options of a
        container. V(provision) - pve_notes_hash's options for the machine's C(pve_provision) files.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Converge the machine as its variables declare
  puls.proxmox.pve_vm: "{{ query('puls.proxmox.vm_options', 'machine') | first }}"
  delegate_to: localhost
'''

RETURN = r'''
_raw:
  description: One dict per term, of the module's options (or, for V(template_spec), of spec keys) to their values.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleError
from ansible.plugins.loader import lookup_loader
from ansible.plugins.lookup import LookupBase

from ansible_collections.puls.proxmox.plugins.plugin_utils._role_options import PURPOSES

# What the builtin vars lookup answers for an undefined variable.
_UNDEFINED = '__puls_undefined__'


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        # The builtin lookup resolves a variable as a template does: role defaults, task vars, nested templates.
        read = lookup_loader.get('ansible.builtin.vars', loader=self._loader, templar=self._templar)
        results = []
        for purpose in terms:
            if purpose not in PURPOSES:
                raise AnsibleError(f'vm_options: {purpose!r} is not one of {", ".join(PURPOSES)}')
            names, options = PURPOSES[purpose]
            values = read.run(list(names), variables, default=_UNDEFINED)
            results.append(options({name: value for name, value in zip(names, values) if value != _UNDEFINED}))
        return results
