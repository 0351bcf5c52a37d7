# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_fleet_info on the controller: hash every machine's provision files where they are, then run the module.

Machines share their provision files, so each distinct set is hashed once. A machine whose files cannot be
hashed is not as declared, and is not sent to the module: the provisioning chain reports the error in full.
Each machine's hashes are returned with its outcome, so that the provisioning chain need not hash them again.
"""

from __future__ import annotations

from dataclasses import asdict

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.puls.proxmox.plugins.module_utils._closure import ProvisionFileError
from ansible_collections.puls.proxmox.plugins.module_utils._fleet_io import ARGUMENT_SPEC, MachineCheck
from ansible_collections.puls.proxmox.plugins.module_utils._module import CONNECTION_ARGSPEC
from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require
from ansible_collections.puls.proxmox.plugins.plugin_utils._in_worker import execute_module
from ansible_collections.puls.proxmox.plugins.plugin_utils._provision_files import hash_provision_files

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        _validation, params = self.validate_argument_spec(argument_spec=dict(CONNECTION_ARGSPEC, **ARGUMENT_SPEC))
        computed, unhashable, machines = {}, {}, []
        for machine in params['machines']:
            provision = machine.get('provision')
            if provision and provision['files'] and provision.get('hashes') is None:
                base_dir = provision.get('base_dir') or self._loader.get_basedir()
                key = (tuple(provision['files']), base_dir, tuple(provision['hash_include']), provision['hash_mode'])
                if key not in computed:
                    computed[key] = self._hash(key)
                hashes = computed[key]
                if isinstance(hashes, ProvisionFileError):
                    unhashable[machine['host']] = asdict(MachineCheck(False, f'the full run reports it: {hashes}'))
                    continue
                machine = dict(machine, provision=dict(provision, hashes=hashes))
            machines.append(machine)
        module_args = dict(self._task.args, machines=machines)
        result.update(execute_module(self, task_vars, 'puls.proxmox.pve_fleet_info', module_args))
        if not result.get('failed'):
            result['machines'].update(unhashable)
            # Added here rather than by the module, whose output masks every value of a secret option: a short
            # ci_password could turn a hash into asterisks.
            hashes = {machine['host']: (machine.get('provision') or {}).get('hashes') for machine in machines}
            for host, check in result['machines'].items():
                check['hashes'] = hashes.get(host)
        return result

    @staticmethod
    def _hash(key):
        """The hashes of one set of files, or the error that stops them; each warning is shown once."""
        files, base_dir, hash_include, hash_mode = key
        try:
            hashes, warnings = hash_provision_files(list(files), base_dir, list(hash_include), hash_mode)
        except ProvisionFileError as exc:
            return exc
        for warning in warnings:
            display.warning(f'pve_fleet_info: {warning}')
        return hashes
