# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A collection module run inside the task's worker process instead of a Python process of its own.

The collection's modules talk to the PVE API from the controller (the role delegates them to localhost with the
controller's own Python). There, Ansible's usual way starts a new Python for each module run, which imports and
compiles the module and every module_utils file it uses from the AnsiballZ zip (a zip import caches no bytecode):
about 0.3 s of CPU a run, most of what a created VM or a check run costs the controller. The task's worker process
is already that Python, with the collection's code loaded and compiled once: the module's main() runs there, as
ansible.netcommon runs network modules ("direct execution"; ansible-core keeps AnsibleModule._record_module_result as
the hook for it).

The module sees what it would see in its own process: its arguments with Ansible's internal ones
(ActionBase._update_module_args), serialized and read back through the module's serialization profile, the task's
environment, and its result parsed by ActionBase._parse_returned_data. The worker process is forked for the one task
and host and ends with it, so what the module changes in the process (its environment, Ansible's module globals)
goes with it; between the items of a loop they are restored.

Only on the ansible-core releases where this is proven (plugin_utils/_ansible_core.py IN_WORKER: the internals it
uses are those of 2.19 and later), and only where the module would run in the controller's own Python: a local
connection without become or async, and ansible_python_interpreter (or the interpreter setting) naming this Python.
Anywhere else, and with the variable pve_direct_execution false, the module runs as usual; the internals are
imported only here, so an older ansible-core never meets them.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import traceback

from ansible import constants as C
from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import runs_in_worker

# The serialization profile of a module that declares no metadata, as the collection's modules (ansible-core's
# executor/module_common.py, _DEFAULT_LEGACY_METADATA).
PROFILE = 'legacy'


def wanted(action, task_vars) -> bool:
    """Whether the task's module runs in this worker: see the module docstring."""
    if not runs_in_worker():
        return False
    if not boolean(action._templar.template(task_vars.get('pve_direct_execution', True)), strict=False):
        return False
    if getattr(action._connection, 'transport', None) != 'local' or action._task.async_val or action._play_context.become:
        return False
    interpreter = task_vars.get('ansible_python_interpreter')
    interpreter = action._templar.template(interpreter) if interpreter is not None else C.config.get_config_value('INTERPRETER_PYTHON', variables=task_vars)
    if not isinstance(interpreter, str) or interpreter.startswith('auto'):
        return False
    return os.path.realpath(os.path.expanduser(interpreter)) == os.path.realpath(sys.executable)


def execute_module(action, task_vars, module_name=None, module_args=None, environment=None, wrap_async=False) -> dict:
    """The result of the module (the task's own by default) run in this worker when wanted(), else as
    ActionBase._execute_module runs it; environment: variables its process gets besides the task's."""
    module_name = module_name or action._task.resolved_action
    module_args = action._task.args if module_args is None else module_args
    if wanted(action, task_vars):
        return run(action, task_vars, module_name, module_args, environment)
    if environment:
        action._task.environment = _as_list(action._task.environment) + [environment]
    return action._execute_module(module_name=module_name, module_args=module_args, task_vars=task_vars, wrap_async=wrap_async)


def run(action, task_vars, module_name, module_args, environment=None) -> dict:
    """The result of module_name (a collection module, by its full name) run here with module_args, as
    ActionBase._execute_module returns it; environment: variables the module's process would get besides the task's."""
    # Only on the releases of _ansible_core.IN_WORKER (2.19 and later), which have them.
    from ansible.module_utils.common.json import Direction, get_module_encoder

    args = dict(module_args)
    action._update_module_args(module_name, args, task_vars)
    payload = json.dumps({'ANSIBLE_MODULE_ARGS': args}, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE))
    recorded: dict[str, str] = {}
    with _module_globals(payload.encode(), recorded), _environment(_task_environment(action), environment or {}):
        try:
            module = importlib.import_module(_python_name(module_name))
            module.main()
        except SystemExit:
            pass
        except Exception as exc:  # what a module's own process would print as its traceback
            return {'failed': True, 'msg': f'{module_name} failed: {exc}', 'exception': traceback.format_exc()}
    if 'output' not in recorded:
        return {'failed': True, 'msg': f'{module_name} ended without a result'}
    return _without_internal_keys(action._parse_returned_data({'stdout': recorded['output'], 'stderr': '', 'rc': 0}, PROFILE))


def _without_internal_keys(parsed) -> dict:
    """The task result of ActionBase._parse_returned_data's as ActionBase._execute_module returns it: on 2.19 and
    2.20 a dict, cleaned with ansible.vars.clean.remove_internal_keys; on 2.21 a UnifiedTaskResult, which cleans itself
    and becomes the dict (ansible-core lib/ansible/plugins/action/__init__.py, ActionBase._execute_module)."""
    if isinstance(parsed, dict):
        from ansible.vars.clean import remove_internal_keys

        remove_internal_keys(parsed)
        return parsed
    parsed.remove_internal_keys()
    return parsed.as_result_dict(for_round_trip=True)


def _python_name(module_name):
    """The Python module of a module's full name: ansible-core's own (ansible.builtin) or a collection's."""
    namespace, collection, name = module_name.split('.')
    if (namespace, collection) == ('ansible', 'builtin'):
        return f'ansible.modules.{name}'
    return f'ansible_collections.{namespace}.{collection}.plugins.modules.{name}'


def _as_list(environment):
    if environment is None:
        return []
    return list(environment) if isinstance(environment, list) else [environment]


@contextlib.contextmanager
def _module_globals(payload, recorded):
    """AnsibleModule reading payload as its arguments and recording its result JSON in recorded['output']; Ansible's
    module globals (its arguments, warnings and deprecations) as they were, after."""
    from ansible.module_utils.common.json import Direction, get_module_encoder

    saved = (basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE, dict(module_warnings._global_warnings), dict(module_warnings._global_deprecations))
    encoder = get_module_encoder(PROFILE, Direction.MODULE_TO_CONTROLLER)

    def record(_module, result):
        recorded['output'] = json.dumps(result, cls=encoder)

    basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE = payload, PROFILE
    module_warnings._global_warnings.clear()
    module_warnings._global_deprecations.clear()
    original_record = basic.AnsibleModule._record_module_result
    basic.AnsibleModule._record_module_result = record
    try:
        yield
    finally:
        basic.AnsibleModule._record_module_result = original_record
        basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE = saved[0], saved[1]
        module_warnings._global_warnings.clear()
        module_warnings._global_warnings.update(saved[2])
        module_warnings._global_deprecations.clear()
        module_warnings._global_deprecations.update(saved[3])


def _task_environment(action):
    """The task's environment (its `environment` keyword), templated and merged as for a module's own process."""
    final = {}
    action._compute_environment_string(raw_environment_out=final)
    return {str(name): str(value) for name, value in final.items()}


@contextlib.contextmanager
def _environment(*layers):
    saved = dict(os.environ)
    for layer in layers:
        os.environ.update(layer)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
