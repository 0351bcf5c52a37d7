# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much of the reconcile's logic lives in the role: counts of roles/reconcile, for issue-sized refactors to
measure before and after (python hacking/role_stats.py [ROLE_DIR]).

- tasks: every task, blocks and the tasks inside them included;
- when: the tasks with a ``when:``, and of those the compound ones (a list, or ``and``/``or`` in the expression);
- set_fact: tasks of ansible.builtin.set_fact;
- includes: include_tasks, import_tasks, include_role, import_role;
- jinja: ``{{ ... }}`` expressions in tasks, vars and defaults, plus bare ``when:``/``until:``/``changed_when:``/
  ``failed_when:`` conditions (Jinja too, without braces);
- inline_if: ``if ... else`` inside a Jinja expression;
- internal_vars: variables the role defines for itself (vars/main.yml, set_fact, register) that are not its
  documented inputs (meta/argument_specs.yml).
"""

import re
import sys
from pathlib import Path

import yaml

CONDITIONS = ('when', 'until', 'changed_when', 'failed_when')
INCLUDES = {'include_tasks', 'import_tasks', 'include_role', 'import_role'}
JINJA = re.compile(r'\{\{.*?\}\}', re.S)
INLINE_IF = re.compile(r'\bif\b[^{}]*?\belse\b', re.S)


def short(action):
    return action.rsplit('.', 1)[-1]


def walk(tasks):
    for task in tasks or ():
        yield task
        for section in ('block', 'rescue', 'always'):
            yield from walk(task.get(section))


def action_of(task):
    keys = set(task) - {'name', 'when', 'loop', 'vars', 'register', 'tags', 'block', 'rescue', 'always', 'no_log'}
    return next((key for key in keys if '.' in key or key in INCLUDES or key == 'set_fact'), None)


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def main(role):
    counts = dict.fromkeys(('tasks', 'when', 'when_compound', 'set_fact', 'includes', 'jinja', 'inline_if', 'internal_vars'), 0)
    internal = set()
    texts = []
    for path in sorted((role / 'tasks').glob('*.yml')):
        for task in walk(yaml.safe_load(path.read_text()) or ()):
            counts['tasks'] += 1
            key = action_of(task)
            action = short(key or '')
            counts['set_fact'] += action == 'set_fact'
            counts['includes'] += action in INCLUDES
            if action == 'set_fact':
                internal.update(k for k in task[key] if k != 'cacheable')
            if 'register' in task:
                internal.add(task['register'])
            if 'when' in task:
                counts['when'] += 1
                condition = task['when']
                counts['when_compound'] += isinstance(condition, list) and len(condition) > 1 or bool(re.search(r'\b(and|or)\b', str(condition)))
            for key in CONDITIONS:
                if key in task:
                    conditions = task[key] if isinstance(task[key], list) else [task[key]]
                    texts.extend('{{ %s }}' % c for c in conditions if isinstance(c, str) and '{{' not in c)
            texts.extend(strings({k: v for k, v in task.items() if k not in CONDITIONS or '{{' in str(v)}))
    for name in ('vars', 'defaults'):
        data = yaml.safe_load((role / name / 'main.yml').read_text()) or {}
        texts.extend(strings(data))
        if name == 'vars':
            internal.update(data)
    documented = set()
    for entry in (yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text()) or {}).get('argument_specs', {}).values():
        documented.update(entry.get('options', {}))
    for text in texts:
        expressions = JINJA.findall(text)
        counts['jinja'] += len(expressions)
        counts['inline_if'] += sum(len(INLINE_IF.findall(e)) for e in expressions)
    counts['internal_vars'] = len(internal - documented)
    for key, value in counts.items():
        print(f'{key}: {value}')


if __name__ == '__main__':
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / 'roles' / 'reconcile'))
