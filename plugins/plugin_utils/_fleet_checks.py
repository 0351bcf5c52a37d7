# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile role's pre-flight checks over the whole declared inventory (filters declared_machines, fleet_problems
and unadopted), on plain data: the declared machines read from every host's variables, also the hosts outside
--limit, and one sentence per problem, so that the role stops every host before any change, naming them all."""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU, noun
from ansible_collections.puls.proxmox.plugins.plugin_utils._image_problems import image_problems
from ansible_collections.puls.proxmox.plugins.plugin_utils._role_options import is_container


def declared_machines(hostvars, templates, vms, containers=()):
    """Each host of the groups pve_templates, pve_vms and pve_containers (``templates``, ``vms``, ``containers``),
    once, as the checks read its variables from ``hostvars`` (host -> its variables), with the role's defaults. A
    container's address is the ``ip`` of its ``pve_container``."""
    machines = []
    for host in dict.fromkeys([*templates, *vms, *containers]):
        declared = hostvars[host]
        container = is_container(host, templates, vms, containers, declared.get('pve_container'))
        machines.append(
            {
                'host': host,
                'name': declared.get('pve_vm_name', host),
                'vmid': declared.get('pve_vmid'),
                'ip': (declared.get('pve_container') or {}).get('ip', '') if container else declared.get('pve_ip', ''),
                'replace': declared.get('pve_replace', ''),
                'image': '' if container else str(declared.get('pve_image', '')),
                'state': declared.get('pve_state', 'present'),
                # As pve_vm reads its adopt option (type bool).
                'adopt': boolean(declared.get('pve_adopt', False), strict=False),
                'template': host in templates,
                'type': LXC if container else QEMU,
            }
        )
    return machines


def unadopted(machines, guests):
    """The guests that declared VMs and containers would take over without pve_adopt (a guest of the machine's type), each
    with ``host`` (see the filter's DOCUMENTATION)."""
    found = []
    for machine in machines or ():
        if machine.get('template') or machine.get('adopt') or machine.get('state', 'present') != 'present':
            continue
        vmid = machine.get('vmid')
        for guest in guests or ():
            if guest.get('type', QEMU) != machine.get('type', QEMU) or guest.get('owned') or guest.get('ownership') not in (None, 'foreign'):
                continue
            if (int(guest['vmid']) == int(vmid)) if vmid not in (None, '') else guest.get('name') == machine.get('name'):
                found.append(dict(guest, host=machine['host']))
    return found


def fleet_problems(machines, guests, replaced, untagged, owner_tag):
    """Every problem of the declared ``machines`` (declared_machines), one sentence each saying what to change:
    VMIDs and addresses declared twice, machines to replace that cannot be, images (image_problems), and guests
    taken over without pve_adopt. ``guests``: the cluster's (pve_fleet_info); ``replaced`` and ``untagged``: the
    details (pve_guest_info) of the guests to replace and of those lacking the owner tag."""
    return [
        *_shared_vmids(machines),
        *_shared_addresses(machines),
        *_replace_problems(machines, replaced, owner_tag),
        *image_problems(machines, guests),
        *(_unadopted_problem(guest, owner_tag) for guest in unadopted(machines, untagged)),
    ]


def _hosts_sharing(machines, value_of):
    """(value, hosts) for each value that more than one machine declares, in value order; a value of None is none."""
    hosts = {}
    for machine in machines:
        value = value_of(machine)
        if value is not None:
            hosts.setdefault(value, []).append(machine['host'])
    # Numbers before text: a VMID of an inventory may be either, and they do not compare.
    return sorted(((value, shared) for value, shared in hosts.items() if len(shared) > 1), key=lambda item: (isinstance(item[0], str), item[0]))


def _vmid(machine):
    # '500' and 500 are one VMID to PVE (pve_vmid is an int).
    vmid = machine.get('vmid')
    return int(vmid) if isinstance(vmid, str) and vmid.isdigit() else vmid


def _shared_vmids(machines):
    return [f'{" and ".join(hosts)} declare the same pve_vmid {vmid}: give each machine its own VMID' for vmid, hosts in _hosts_sharing(machines, _vmid)]


def _static_address(machine):
    ip = machine.get('ip')
    return str(ip).split('/', 1)[0] if ip and ip != 'dhcp' else None


def _shared_addresses(machines):
    return [
        f'{" and ".join(hosts)} declare the same address {address} (pve_ip): give each machine its own address'
        for address, hosts in _hosts_sharing(machines, _static_address)
    ]


def _replace_problems(machines, replaced, owner_tag):
    names = {machine['name'] for machine in machines}
    problems = []
    for machine in machines:
        old_name = machine.get('replace')
        if not old_name:
            continue
        old = [guest for guest in replaced or () if guest.get('name') == old_name]
        said = f'{machine["host"]}: pve_replace is {old_name},'
        if old_name in names:
            problems.append(f'{said} which is declared in this inventory; a machine to replace must not be declared: remove it from the inventory')
        elif any(guest.get('protected') for guest in old):
            problems.append(f'{said} which is protected in Proxmox VE; turn its protection off first if it really is to go')
        elif any(guest.get('ownership') == 'foreign' for guest in old):
            problems.append(f'{said} which lacks the owner tag {owner_tag}, so this collection did not make it; remove it by hand')
        elif any(guest.get('ownership') == 'inherited' for guest in old):
            problems.append(f'{said} whose owner record names another VMID: a clone made outside this collection; remove it by hand')
    return problems


def _unadopted_problem(guest, owner_tag):
    why = (
        ', but its Notes hold a [puls-provision: ...] record, so Puls provisioned it (an earlier release, or the tag was removed)'
        if guest.get('provisioned')
        else ', so this collection did not create it'
    )
    return (
        f'{guest["host"]}: {noun(guest.get("type", QEMU))} {guest["vmid"]} ({guest["name"]} on {guest["node"]}) lacks the owner tag {owner_tag}{why}; '
        f'to take it over set pve_adopt: true for {guest["host"]} (the owner tag and record are then added), or choose '
        'another pve_vm_name'
    )
