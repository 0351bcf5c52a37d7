# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_vars: every host's variables validated and each machine's options built in one task, in one process.

Ansible validates a role's variables with a task per host (a worker process each), and a set_fact that reads a
variable per host costs as much: at a hundred machines that need nothing, those two tasks were most of a zero-drift
run (docs/performance.md). Here each host's variables are computed as its own task would see them (the variable
manager of the run, with this task's play and role) and validated with the same validator Ansible's
ansible.builtin.validate_argument_spec uses, one host after the other, with no process per host. The machines' module
options are built from the validated values in Python (plugin_utils/_role_options.py, which the role's vars/main.yml
uses too), not by templating the role's variables per host: Ansible compiles a Jinja template anew each time.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require
from ansible_collections.puls.proxmox.plugins.plugin_utils._role_options import fleet_machine, is_container

ARGUMENT_SPEC = {
    'hosts': {'type': 'list', 'elements': 'str', 'required': True},
    'entry_point': {'type': 'str', 'default': 'main'},
    'gather_hosts': {'type': 'list', 'elements': 'str', 'default': []},
    'template_hosts': {'type': 'list', 'elements': 'str', 'default': []},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        _validation, params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        validator = ArgumentSpecValidator(self._role_options(task_vars, params['entry_point']))
        gather_hosts, template_hosts = set(params['gather_hosts']), set(params['template_hosts'])
        groups = task_vars.get('groups') or {}
        templates, vms, containers = (groups.get(group) or [] for group in ('pve_templates', 'pve_vms', 'pve_containers'))
        errors, gathered, built = {}, {}, {}
        for host in params['hosts']:
            try:
                templar = self._templar.copy_with_new_env()
                variables = self._variables_of(host, task_vars)
                templar.available_variables = variables
                problems, provided = self._validated(templar, validator)
                if problems:
                    errors[host] = problems
                elif host in gather_hosts or host in template_hosts:
                    container = is_container(host, templates, vms, containers, provided.get('pve_container'))
                    (built if host in template_hosts else gathered)[host] = fleet_machine(host, provided, container)
            except AnsibleError as exc:
                errors[host] = [str(exc)]
        result.update(changed=False, errors=errors, hosts=gathered, templates=built)
        return result

    def _role_options(self, task_vars, entry_point):
        """The options of the calling role's argument spec entry point (its meta/argument_specs.yml)."""
        if 'role_path' not in task_vars:
            raise AnsibleError('fleet_vars validates the variables of a role: run it from a task of the role')
        path = os.path.join(task_vars['role_path'], 'meta', 'argument_specs.yml')
        specs = (self._loader.load_from_file(path) or {}).get('argument_specs') or {}
        if entry_point not in specs:
            raise AnsibleError(f'{path} has no entry point {entry_point!r}')
        return specs[entry_point].get('options') or {}

    def _variables_of(self, host, task_vars):
        """host's variables as a task of this play and role on host would see them."""
        # The variable manager and inventory of the run: HostVars holds them; no public accessor reaches them.
        variable_manager = task_vars['hostvars']._variable_manager
        inventory_host = variable_manager._inventory.get_host(host)
        if inventory_host is None:
            raise AnsibleError(f'{host} is not a host of the inventory')
        return variable_manager.get_vars(
            play=self._task.get_play(),
            host=inventory_host,
            task=self._task,
            _hosts=task_vars.get('ansible_play_hosts'),
            _hosts_all=task_vars.get('ansible_play_hosts_all'),
        )

    @staticmethod
    def _validated(templar, validator):
        """What ansible.builtin.validate_argument_spec would say of these variables (the role's options only), and
        their templated values."""
        variables = templar.available_variables
        provided = {name: _plain(templar.template(variables[name])) for name in validator.argument_spec if name in variables}
        return list(validator.validate(provided, validate_role_argument_spec=True).error_messages), provided


def _plain(value):
    """value with Ansible's tagged types (a templated string carries its origin) made the plain ones: the validator
    deep-copies what it validates, which for tagged values costs most of this task's time at a hundred hosts."""
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    for plain in (bool, str, int, float):
        if isinstance(value, plain):
            return plain(value)
    return value
