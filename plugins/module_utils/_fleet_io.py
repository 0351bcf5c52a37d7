# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_fleet_info's work: which declared VMs are already exactly as declared, found in one pass over the cluster.

A machine is a VM (``type: qemu``, pve_vm's options) or an LXC container (``type: lxc``, pve_container's options,
planned by ``_ct_plan.plan_container``). A scheduled reconcile of an unchanged fleet should cost about one scan of the cluster. Asking pve_vm and
pve_notes_hash host by host costs a module process per host and task, and several requests per VM. This
pass reads ``/cluster/resources`` once and each declared VM's config once (the config holds the Notes, so
the provision record too), and runs the same pure planners those modules run: ``_vm_plan.plan_vm`` and
``_notes_io.plan_notes``.

A machine is as declared when pve_vm would do nothing, no provision file is pending, its record names no
file that is no longer declared, and the machine it replaces is gone. Anything else makes it not as
declared, any error while checking it included (an invalid option, a foreign VM of the name, a DNS
failure): the reconcile role then takes that machine the whole way, through pve_vm and the provisioning
chain, which report such errors in full. So this pass can only spare work, never skip any.

It also returns the listing's guests, as pve_guest_info lists them, so that one module run serves the role's
checks of the whole inventory too.

A running VM whose restart record (``_restart``) still names keys awaiting a restart of its current boot is not
as declared either ("awaiting restart: ipconfig0"): in ``apply_mode: report`` pve_vm reports them in
``reboot_required`` until the VM restarts. The record is in the Notes and the boot is judged by the listing's
``uptime``, so this costs no request.

Requests: the listing; one config read per declared VM that exists (for a container, its config, its status and,
while it runs, its running config, as pve_container reads them); for a running VM in ``apply_mode:
reboot``, also what waits for a restart (it can make a restart); for a VM addressed by DHCP, its guest
agent. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.puls.proxmox.plugins.module_utils import _ct_io
from ansible_collections.puls.proxmox.plugins.module_utils._ct_config import CtSpec
from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import find_container, plan_container
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU
from ansible_collections.puls.proxmox.plugins.module_utils._guests_io import describe
from ansible_collections.puls.proxmox.plugins.module_utils._notes_io import NotesRequest, plan_notes
from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import CT_ARGUMENT_SPEC, VM_ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._tag_style import as_stored
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import DEFAULT_OWNER_TAG
from ansible_collections.puls.proxmox.plugins.module_utils._vm_io import Declared, Outcome, Vm, observe, reach_address, seed_volume_for
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import find_vm, plan_vm
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import list_volumes

# pve_fleet_info's options (documented in the module); its action plugin validates with them too.
ARGUMENT_SPEC = {
    'machines': {
        'type': 'list',
        'elements': 'dict',
        'required': True,
        'options': {
            'host': {'type': 'str', 'required': True},
            'type': {'type': 'str', 'choices': [QEMU, LXC], 'default': QEMU},
            'vm': {'type': 'dict', 'required': True},
            'provision': {
                'type': 'dict',
                'options': {
                    'files': {'type': 'list', 'elements': 'str', 'default': []},
                    'force': {'type': 'bool', 'default': False},
                    'hash_mode': {'type': 'str', 'choices': ['closure', 'file'], 'default': 'closure'},
                    'hash_include': {'type': 'list', 'elements': 'path', 'default': []},
                    'base_dir': {'type': 'path'},
                    'hashes': {'type': 'dict'},
                },
            },
            'replace': {'type': 'str'},
        },
    },
    'owner_tag': {'type': 'str', 'default': DEFAULT_OWNER_TAG},
    'volumes': {'type': 'list', 'elements': 'str', 'default': []},
}

# Each guest type's module options: the validator and the options whose values never show.
OPTIONS = {
    kind: (ArgumentSpecValidator(spec), tuple(name for name, option in spec.items() if option.get('no_log')))
    for kind, spec in ((QEMU, VM_ARGUMENT_SPEC), (LXC, CT_ARGUMENT_SPEC))
}


@dataclass(frozen=True)
class MachineCheck:
    """One declared machine against the cluster: as declared or not, why not, and where the VM is."""

    as_declared: bool
    reason: str
    vmid: int | None = None
    node: str | None = None
    address: str | None = None


def vm_params(options: Mapping, guest_type: str = QEMU) -> tuple[dict, set]:
    """pve_vm's params (pve_container's for ``lxc``) from a machine's options (defaults filled, types converted) and
    the values never to show.

    Raises ValueError with the module's own messages for options it would refuse.
    """
    validator, secret_options = OPTIONS[guest_type]
    validated = validator.validate(dict(options))
    if validated.error_messages:
        raise ValueError('; '.join(validated.error_messages))
    params = validated.validated_parameters
    return params, {str(params[name]) for name in secret_options if params.get(name)}


def prepare(machines: list[Mapping]) -> tuple[list[dict], dict[str, MachineCheck], set]:
    """Before any request: the machines whose pve_vm options are valid, with pve_vm's params; the others, not as
    declared; and the values of no_log options among them (ci_password, user_data) for the module to keep out of
    its output."""
    ready, refused, secrets = [], {}, set()
    for machine in machines:
        try:
            params, hidden = vm_params(machine['vm'], machine.get('type') or QEMU)
        except ValueError as exc:
            refused[machine['host']] = not_as_declared(exc)
            continue
        secrets |= hidden
        ready.append(dict(machine, vm=params))
    return ready, refused, secrets


def check_fleet(client, machines: list[Mapping]) -> tuple[dict[str, MachineCheck], list[Mapping]]:
    """Each prepared machine (``host``, ``vm``: pve_vm's params, ``provision``: files, force and hashes, ``replace``)
    checked against one listing of the cluster; and that listing."""
    resources = client.cluster_vms()
    checks = {}
    for machine in machines:
        try:
            checks[machine['host']] = _check(client, resources, machine)
        except (ValueError, PveApiError) as exc:
            checks[machine['host']] = not_as_declared(exc)
    return checks, resources


def not_as_declared(exc: Exception) -> MachineCheck:
    # ValueError: SpecError, SeedDataError, NotesError and the record's errors, each with its message for the user.
    return MachineCheck(False, f'the full run reports it: {exc}')


def _check(client, resources, machine: Mapping) -> MachineCheck:
    if machine.get('type') == LXC:
        return _check_container(client, resources, machine)
    declared = Declared.from_params(machine['vm'])
    spec = declared.spec
    found, unfound = _find(resources, machine, spec, find_vm)
    if found is None:
        return unfound
    observed = observe(client, found, restart_matters=spec.apply_mode == 'reboot')
    vm = Vm(observed.vmid, observed.node, spec.name)
    plan = plan_vm(as_stored(client, spec, observed.config.get('tags')), observed, None, seed_volume_for(client, declared, observed.node, observed.config))
    # A reboot_required in report mode: the keys of the VM's restart record (_restart), judged by the listing's uptime.
    pending = _pending(machine, plan, 'VM', observed)
    if pending is not None:
        return pending
    outcome = Outcome(vm, observed.status)
    address = reach_address(client, spec, outcome, observed.config, declared.dns_address, observed.running, machine['vm']['agent_timeout'])
    return MachineCheck(True, '; '.join(outcome.warnings), vm.vmid, vm.node, address)


def _check_container(client, resources, machine: Mapping) -> MachineCheck:
    """A container, as pve_container would find, read and plan it (``_ct_io``)."""
    spec = CtSpec.from_params(machine['vm'])
    found, unfound = _find(resources, machine, spec, find_container)
    if found is None:
        return unfound
    observed = _ct_io.observe_in(client, found, resources, spec)
    pending = _pending(machine, plan_container(as_stored(client, spec, observed.config.get('tags')), observed, None), 'container', observed)
    if pending is not None:
        return pending
    return MachineCheck(True, '', observed.vmid, observed.node, _ct_io.container_address(spec, observed.config))


def _find(resources, machine: Mapping, spec, find) -> tuple[Mapping | None, MachineCheck]:
    """The machine's entry in the listing (``find``: find_vm, find_container), or None and why it is not as declared
    without a read: declared absent, not created yet, or the machine it replaces still exists."""
    if spec.state == 'absent':
        return None, MachineCheck(False, 'declared absent')
    found = find(resources, spec.name, spec.vmid)
    if found is None:
        return None, MachineCheck(False, 'not created yet')
    replaced = machine.get('replace')
    if replaced and find(resources, replaced) is not None:
        return None, MachineCheck(False, f'replaces {replaced}, which still exists')
    return found, MachineCheck(True, '')


def _pending(machine: Mapping, plan, noun: str, observed) -> MachineCheck | None:
    """Why the machine found is not as declared: its module's plan changes it or it awaits a restart, files of its
    provision record are pending, or the record names files no longer declared; None when nothing is pending."""
    vmid, node = observed.vmid, observed.node
    if plan.changed:
        return MachineCheck(False, f'{noun} to converge: ' + (', '.join(plan.changes) or ', '.join(a.kind for a in plan.actions)), vmid, node)
    if plan.reboot_required:
        return MachineCheck(False, 'awaiting restart: ' + ', '.join(plan.reboot_required), vmid, node)
    provision = machine.get('provision') or {}
    if provision.get('files'):
        request = NotesRequest.from_params(dict(provision, state='query'))
        notes = plan_notes(observed.config.get('description'), request)
        if notes.pending:
            return MachineCheck(False, 'provision files pending: ' + ', '.join(notes.pending), vmid, node)
        if notes.stale:
            return MachineCheck(False, 'record of files no longer declared: ' + ', '.join(notes.stale), vmid, node)
    return None


def find_volumes(client, volumes: list[str]) -> dict[str, list[str]]:
    """Each volume STORAGE:CONTENT/FILE (an ISO, an OS template, an image to import) -> the online nodes whose storage
    lists it; one content listing per node, storage and content type. A storage a node lacks, or cannot list, holds
    none of them there."""
    wanted = {volume: volume.split(':', 1) for volume in dict.fromkeys(volumes) if ':' in volume and '/' in volume.split(':', 1)[1]}
    found: dict[str, list[str]] = {volume: [] for volume in volumes}
    if not wanted:
        return found
    nodes = sorted(item['node'] for item in client.get('/nodes', context='listing the nodes of the cluster') or () if item.get('status') == 'online')
    listed: dict[tuple[str, str, str], set] = {}
    for volume, (storage, name) in wanted.items():
        content = name.split('/', 1)[0]
        for node in nodes:
            key = (node, storage, content)
            if key not in listed:
                try:
                    listed[key] = set(list_volumes(client, node, storage, content))
                except PveApiError:
                    listed[key] = set()
            if volume in listed[key]:
                found[volume].append(node)
    return found


def fleet_result(checks: Mapping[str, MachineCheck], resources: list[Mapping], owner_tag: str, volumes: Mapping[str, list[str]] | None = None) -> dict:
    """The module's result: every machine's check, the hosts as declared, the guests of the listing (as
    pve_guest_info lists them), which the reconcile role's checks use, and where each volume asked about is."""
    volumes = dict(volumes or {})
    return {
        'changed': False,
        'machines': {host: asdict(check) for host, check in checks.items()},
        'as_declared': [host for host, check in checks.items() if check.as_declared],
        'guests': [describe(entry, owner_tag) for entry in sorted(resources, key=lambda item: int(item['vmid']))],
        'volumes': volumes,
        'missing_volumes': [volume for volume, nodes in volumes.items() if not nodes],
    }
