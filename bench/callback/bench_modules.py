# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark-only callback: counts the module processes a playbook run starts, and times each task.

Every module Ansible runs on a target (here the controller itself: the modules are delegated to localhost)
goes through ActionBase._execute_module, which ships the module and starts a Python process for it. This
callback wraps that method in the controller before the task workers fork, so each worker appends one
line (the module's name) to the file named by PULS_BENCH_MODULES. A collection module run inside the worker
instead (plugins/plugin_utils/_in_worker.py) starts no process: it is written as `in-worker:NAME`. Tasks that run only in the controller
(set_fact, assert, debug, include_tasks, a skipped task) start no module process and are not counted.
With PULS_BENCH_TASKS set, it also writes each task's wall seconds (from its start to the next task's, over all hosts)
to that file as JSON at the end of the run: where the time of a run goes.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: bench_modules
type: aggregate
short_description: count the module processes of a run (benchmark only)
description: Appends the name of every module executed to PULS_BENCH_MODULES; writes task timings to PULS_BENCH_TASKS.
options: {}
"""

import functools
import json
import os
import time

from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase

try:  # the peer's runs have no puls.proxmox
    from ansible_collections.puls.proxmox.plugins.plugin_utils import _in_worker
except ImportError:
    _in_worker = None


def _note(line):
    path = os.environ.get('PULS_BENCH_MODULES')
    if path:
        # One short O_APPEND write per module: atomic across the forked workers.
        with open(path, 'a', encoding='utf-8') as out:
            out.write(f'{line}\n')


def _counting(execute_module):
    @functools.wraps(execute_module)
    def wrapper(self, module_name=None, *args, **kwargs):
        _note(module_name or self._task.resolved_action or self._task.action)
        return execute_module(self, module_name, *args, **kwargs)

    wrapper.puls_bench_counting = True
    return wrapper


def _counting_in_worker(run):
    @functools.wraps(run)
    def wrapper(action, task_vars, module_name, *args, **kwargs):
        _note(f'in-worker:{module_name}')
        return run(action, task_vars, module_name, *args, **kwargs)

    wrapper.puls_bench_counting = True
    return wrapper


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'bench_modules'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not getattr(ActionBase._execute_module, 'puls_bench_counting', False):
            ActionBase._execute_module = _counting(ActionBase._execute_module)
        if _in_worker is not None and not getattr(_in_worker.run, 'puls_bench_counting', False):
            _in_worker.run = _counting_in_worker(_in_worker.run)
        self._timings = []

    def _close_task(self):
        if self._timings and self._timings[-1][1] is None:
            self._timings[-1][1] = time.monotonic() - self._timings[-1][2]

    def _start(self, name):
        self._close_task()
        self._timings.append([name, None, time.monotonic()])

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task.get_name())

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task.get_name())

    def v2_playbook_on_stats(self, stats):
        self._close_task()
        path = os.environ.get('PULS_BENCH_TASKS')
        if path:
            with open(path, 'w', encoding='utf-8') as out:
                json.dump([[name, round(seconds, 3)] for name, seconds, _start in self._timings], out)
