# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_notes_hash on the controller: hash the provision files where they are, then run the module with the hashes.

The files live next to the playbook on the controller, not where the module runs, so they are
resolved and hashed here: relative to ``base_dir`` or else the playbook's directory (as Ansible
resolves a playbook's relative paths), with roles found on the configured roles path. The module
gets the hashes and never reads a file.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.puls.proxmox.plugins.module_utils._closure import ProvisionFileError
from ansible_collections.puls.proxmox.plugins.module_utils._module import CONNECTION_ARGSPEC
from ansible_collections.puls.proxmox.plugins.module_utils._notes_io import ARGUMENT_SPEC, REQUIRED_ONE_OF, NotesError, check_files
from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require
from ansible_collections.puls.proxmox.plugins.plugin_utils._in_worker import execute_module
from ansible_collections.puls.proxmox.plugins.plugin_utils._provision_files import hash_provision_files

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        # Fails the task, before anything else, on a wrong option: the same checks the module makes.
        _validation, params = self.validate_argument_spec(argument_spec=dict(CONNECTION_ARGSPEC, **ARGUMENT_SPEC), required_one_of=REQUIRED_ONE_OF)
        module_args = dict(self._task.args)
        if params.get('hashes') is None:
            base_dir = params.get('base_dir') or self._loader.get_basedir()
            try:
                # A path the record cannot hold is refused before any file is read.
                check_files(params['files'], params.get('record'))
                module_args['hashes'], warnings = hash_provision_files(params['files'], base_dir, params['hash_include'], params['hash_mode'])
            except (NotesError, ProvisionFileError) as exc:
                result.update(failed=True, msg=str(exc))
                return result
            for warning in warnings:
                display.warning(f'pve_notes_hash: {warning}')
        result.update(execute_module(self, task_vars, 'puls.proxmox.pve_notes_hash', module_args))
        return result
