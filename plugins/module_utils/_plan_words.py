# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The words of the plan: the actions a machine's plan lists, defined once for the role (filter
puls.proxmox.plan_actions) and the plan summary callback (its totals), and documented from here (docs/index.md's table,
checked by tests/unit/test_plan_summary.py).

Pure: the role gives the results of its tasks, this says what they mean as plan words.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

# (word as printed, the total it counts in, what it means), in the order of the printed total.
ACTIONS = (
    (
        'create',
        'create',
        'The VM is created (cloned or imported), the ISO or cloud image of `pve_isos` downloaded or uploaded, the '
        'network interface of `pve_networks` or the SDN zone, VNet or subnet of `pve_sdn` created.',
    ),
    ('update', 'update', 'Settings of the VM (or the file of an ISO, a network interface, an SDN object) are changed in place.'),
    ('update (reboot needed)', 'update', 'Settings are changed that the running VM takes only at its next boot (`pve_apply_mode: report`).'),
    ('build', 'build', 'The template is built for the first time: a build VM is made, provisioned, generalized and converted.'),
    ('rebuild (REASON)', 'rebuild', 'The template is built anew because what built it changed, for example `rebuild (provision file base.yml changed)`.'),
    ('provision FILE, ...', 'provision', 'These provision files run, in order: the pending ones of a VM, every one of a template being built.'),
    ('replace OLD', 'replace', 'The VM `OLD` of `pve_replace` is destroyed once this machine is created and provisioned.'),
    (
        'destroy',
        'destroy',
        'The machine declared `pve_state: absent` (or the stack, `puls.proxmox.destroy`) is destroyed, or the ISO, '
        'network interface or SDN object declared absent deleted.',
    ),
    (
        'prune',
        'prune',
        'The owned guest declared nowhere is destroyed (`pve_prune: true`), the owned network interface that its '
        "node's entry of `pve_networks` no longer declares deleted (the entry's `prune`), or the owned SDN VNet (and its "
        'subnets) or the subnet of an owned VNet that `pve_sdn` no longer declares deleted (`pve_sdn.prune`).',
    ),
    (
        'orphan',
        'orphan',
        'The owned guest is declared nowhere and left alone: `pve_prune` is off, or prune never takes it '
        '(protected, or a template that linked clones use). Counted, but not work to do.',
    ),
    ('ok', None, 'Nothing to do: the machine is as declared. Only ever alone.'),
)
COUNTED = tuple(dict.fromkeys(total for _word, total, _meaning in ACTIONS if total))
# The counted words that are no work to do: the guest is out of sync, and the run leaves it so.
LEFT_ALONE = ('orphan',)
KIND_ORDER = ('network', 'sdn', 'iso', 'template', 'vm', 'container')
OK = 'ok'
# pve_iso's action on a node -> the plan word of the file.
ISO_WORDS = {'none': OK, 'download': 'create', 'upload': 'create', 'replace': 'update', 'delete': 'destroy'}


def action_kind(action: str) -> str:
    """'update (reboot needed)' -> 'update', 'provision a.yml, b.yml' -> 'provision'."""
    return action.split(' ', 1)[0]


def vm_words(result: Mapping[str, Any] | None) -> list[str]:
    """The words of pve_vm's result for a declared VM: create, update (reboot needed), update, or none."""
    if not result or not result.get('changed'):
        return []
    if 'state' in (result.get('changes') or ()):
        return ['create']
    return ['update (reboot needed)'] if result.get('reboot_required') else ['update']


def template_words(query: Mapping[str, Any] | None) -> list[str]:
    """The words of pve_template's query (state: query): build, rebuild (REASON), or none when current."""
    if not query or query.get('current'):
        return []
    if query.get('vmid') is None:
        return ['build']
    return ['rebuild ({0})'.format(query.get('reason') or 'the spec changed')]


def provision_words(files: Iterable[str] | None) -> list[str]:
    files = list(files or ())
    return ['provision ' + ', '.join(files)] if files else []


def machine_actions(template=None, vm=None, provision=None, replaced=None, destroyed=False):
    """A declared machine's plan: its template's or VM's words, the files to run, the replacement, the destroy; or ok.

    ``template`` is pve_template's query, ``vm`` pve_vm's result, ``provision`` the files that run, ``replaced`` the
    name of the old machine destroyed (or to be), ``destroyed`` whether the machine itself goes.
    """
    actions = template_words(template) + vm_words(vm) + provision_words(provision)
    actions += ['replace ' + replaced] if replaced else []
    actions += ['destroy'] if destroyed else []
    return actions or [OK]


def iso_actions(node_actions: Mapping[str, str] | None) -> list[str]:
    """The plan of one entry of pve_isos, from pve_iso's action on each node."""
    words = [ISO_WORDS.get(action, action) for action in (node_actions or {}).values()]
    return list(dict.fromkeys(word for word in words if word != OK)) or [OK]


def network_plans(result: Mapping[str, Any] | None, node: str, declared: Iterable[str]) -> list[dict[str, Any]]:
    """The plans of one node's interfaces from pve_node_network's result: one per declared interface and one per
    interface the run deletes, named NODE/IFACE. A delete is ``destroy`` for a declared interface (``state: absent``)
    and ``prune`` for one no longer declared; the module's ``apply`` (the one reload) is not an interface's."""
    declared = list(dict.fromkeys(declared))
    words: dict[str, list[str]] = {name: [] for name in declared}
    for action in (result or {}).get('actions') or ():
        kind, _space, rest = action.partition(' ')
        if kind not in ('create', 'update', 'delete') or not rest:
            continue
        iface = rest.split(' ', 1)[0]
        word = kind if kind != 'delete' else ('destroy' if iface in declared else 'prune')
        words.setdefault(iface, [])
        if word not in words[iface]:
            words[iface].append(word)
    return [{'kind': 'network', 'name': f'{node}/{iface}', 'actions': actions or [OK]} for iface, actions in words.items()]


def sdn_plans(result: Mapping[str, Any] | None, declared: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The plans of the SDN objects from pve_sdn's result and its options (``declared``): one per declared zone, VNet and
    subnet and one per object the run deletes, named as the module's ``changes`` name them (``zone NAME``, ``vnet NAME``,
    ``subnet VNET CIDR``). An object in ``changes`` is created, updated or deleted as the module's action on it says (a
    delete is ``destroy`` when declared ``state: absent``, ``prune`` otherwise); the others are ``ok``. The ``apply``
    is no object's."""
    declared = declared or {}
    vnets = {str(item['name']): item for item in declared.get('vnets') or ()}
    names = [f"zone {item['name']}" for item in declared.get('zones') or ()]
    names += [f'vnet {name}' for name in vnets]
    subnets = {f"subnet {item['vnet']} {_network(item['cidr'])}": item for item in declared.get('subnets') or ()}
    names += list(subnets)
    absent = {f"zone {item['name']}" for item in declared.get('zones') or () if item.get('state') == 'absent'}
    absent |= {f'vnet {name}' for name, item in vnets.items() if item.get('state') == 'absent'}
    absent |= {label for label, item in subnets.items() if item.get('state') == 'absent'}
    # The module's actions name a subnet by its ID, ZONE-NETWORK-MASK (pve-network Subnets.pm create).
    verbs = {}
    for action in (result or {}).get('actions') or ():
        verb, _space, rest = action.partition(' ')
        kind, _space, object_id = rest.partition(' ')
        verbs[(kind, object_id if kind != 'subnet' else object_id.partition('-')[2])] = verb
    words: dict[str, list[str]] = {name: [] for name in dict.fromkeys(names)}
    for label in (result or {}).get('changes') or ():
        kind, _space, rest = label.partition(' ')
        verb = verbs.get((kind, rest if kind != 'subnet' else rest.partition(' ')[2].replace('/', '-')))
        if verb is None:
            continue
        word = verb if verb != 'delete' else ('destroy' if label in absent else 'prune')
        words[label] = [word]
    return [{'kind': 'sdn', 'name': name, 'actions': actions or [OK]} for name, actions in words.items()]


def _network(cidr: Any) -> str:
    """A subnet's CIDR as pve_sdn names it (normalized), or as given when it is none."""
    try:
        return ipaddress.ip_network(str(cidr), strict=False).with_prefixlen
    except ValueError:
        return str(cidr)


def words_table() -> str:
    """The Markdown table of the plan words, as docs/index.md shows it."""
    lines = ['| action | counted in | meaning |', '|---|---|---|']
    for word, total, meaning in ACTIONS:
        lines.append('| `{0}` | {1} | {2} |'.format(word, f'`{total}`' if total else '`ok` (alone)', meaning))
    return '\n'.join(lines)
