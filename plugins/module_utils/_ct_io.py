# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_container's I/O: observe one container, plan its convergence (pure, ``_ct_plan``), then execute the plan.

``reconcile_container`` is the whole module run, the four steps of every resource module:
1. validate the options (``CtSpec``): bad input fails before any request;
2. observe: one ``GET /cluster/resources`` finds the container; for one found, its status and config (pending
   merged, and as it runs while it runs); for a missing one, its source (an OS template volume, checked to exist on
   the node's storage, or a container template and its config) and the node;
3. plan, check the privileges the plan needs, and in a real run execute the actions in order, waiting for every
   task and for a new container's lock (a clone in its source's turn, ``_ct_clone``);
4. the address of a static ``ip`` (declared, or net0's own).

Check mode stops after the plan, so both modes report the plan's ``changed``, ``diff`` and ``changes``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from ansible_collections.puls.proxmox.plugins.module_utils._address import static_address
from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._ct_clone import clone_in_turn
from ansible_collections.puls.proxmox.plugins.module_utils._ct_config import CtSpec
from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import (
    CLONE,
    CONFIGURE,
    CREATE,
    DESTROY,
    RESIZE,
    SHUTDOWN,
    START,
    Creation,
    Observed,
    find_container,
    plan_container,
    resolve_source,
    volumes_to_measure,
)
from ansible_collections.puls.proxmox.plugins.module_utils._ct_privileges import CT_CREATE_OLD_TAGS, container_needs
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_missing
from ansible_collections.puls.proxmox.plugins.module_utils._guest import DEFAULT_SHUTDOWN_TIMEOUT, LXC, guest_path, guests_path
from ansible_collections.puls.proxmox.plugins.module_utils._linked import storage_types
from ansible_collections.puls.proxmox.plugins.module_utils._ownership import with_record
from ansible_collections.puls.proxmox.plugins.module_utils._placement import choose_node
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import require, tag_needs
from ansible_collections.puls.proxmox.plugins.module_utils._tag_style import as_stored
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import wait_power_state
from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import describe
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError, storage_of
from ansible_collections.puls.proxmox.plugins.module_utils._vmid import create_with_new_vmid
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import list_volumes, volume_size


@dataclass
class Container:
    """The container acted on: found, created during the run, or (in check mode) still to be created."""

    vmid: int | None
    node: str | None
    name: str

    def path(self, suffix=''):
        return guest_path(self.node, self.vmid, suffix, LXC)

    def __str__(self):
        return f'container {self.name} ({self.vmid} on {self.node})'


@dataclass
class Outcome:
    container: Container
    status: str
    warnings: list = field(default_factory=list)


def reconcile_container(client, params, check_mode=False):
    """The module's run: returns the result dict; raises SpecError for what the user must change, PveApiError from PVE."""
    spec = CtSpec.from_params(params)
    timeout = params.get('timeout') or DEFAULT_TASK_TIMEOUT
    resources = client.cluster_vms()
    found = find_container(resources, spec.name, spec.vmid)
    observed = None if found is None else observe_in(client, found, resources, spec)
    warnings = []
    creation = None if observed is not None or spec.state == 'absent' else plan_creation(client, spec, resources, check_mode, warnings)
    spec = as_stored(client, spec, observed.config.get('tags') if observed else None)
    plan = plan_container(spec, observed, creation)

    if observed is not None:
        container = Container(observed.vmid, observed.node, spec.name)
    else:
        container = Container(spec.vmid, creation and creation.node, spec.name)
    outcome = Outcome(container, final_status(plan, observed), warnings)
    tags_now = (observed.config if observed else (creation and creation.source_config) or {}).get('tags')
    needs = [*container_needs(plan.actions, container.vmid, creation and creation.source_config), *tag_needs(plan.actions, tags_now, CT_CREATE_OLD_TAGS)]
    require(client, needs, f'the plan for container {spec.name}')
    if not check_mode:
        Execution(client, outcome, timeout).run(plan.actions)
    address = None
    if outcome.status != 'absent':
        address = container_address(spec, observed.config if observed else creation.source_config)
    return {
        'changed': plan.changed,
        'diff': plan.diff,
        'vmid': outcome.container.vmid,
        'node': outcome.container.node,
        'status': outcome.status,
        'address': address,
        'reboot_required': list(plan.reboot_required),
        'changes': list(plan.changes),
        'warnings': outcome.warnings,
    }


def container_address(spec, config):
    """The static address of the declared ip, else of the config's net0 (a clone's source's, for a new clone); None
    under DHCP. net0's ip has ipconfig0's form."""
    if spec.ip is None:
        return static_address((config or {}).get('net0'))
    return None if spec.ip == 'dhcp' else str(spec.ip.ip)


def observe_in(client, entry, resources, spec):
    """The Observed container of a listing's entry, naming the listing's other guests by VMID (for messages), with the
    sizes of the volumes spec's plan must measure."""
    observed = observe(client, entry)
    names = {int(item['vmid']): describe(item) for item in resources}
    return replace(observed, names=names, volume_sizes=measure_volumes(client, observed.node, spec, observed.config))


def measure_volumes(client, node, spec, config):
    """The storage's size of each volume of config that volumes_to_measure names (none, mostly: no request)."""
    return {key: volume_size(client, node, volid) for key, volid in volumes_to_measure(spec, config).items()}


def observe(client, entry):
    """The Observed container of a /cluster/resources entry: status, config (pending merged), running config."""
    vmid, node = int(entry['vmid']), entry['node']
    config = client.vm_config(node, vmid, guest_type=LXC)
    status = client.get(guest_path(node, vmid, '/status/current', LXC), context=f'reading the status of container {vmid} on {node}')['status']
    current = client.vm_config(node, vmid, current=True, guest_type=LXC) if status == 'running' else None
    return Observed(vmid, node, status, config, current)


def plan_creation(client, spec, resources, check_mode=False, warnings=None):
    """How the missing container is made: its source resolved and the node chosen; a container template's config is
    read. An OS template must be on the node's storage; in check mode one that is not is a warning, since an earlier
    task of the same run (pve_iso) may download it."""
    source = resolve_source(spec, resources)
    if source.volume is None:
        config = client.vm_config(source.node, source.vmid, guest_type=LXC)
        # A linked clone needs its storage's clone feature: their types, read only then.
        types = storage_types(client.get('/cluster/resources', type='storage', context='listing the storages of the cluster')) if spec.linked_clone else {}
        return Creation(source, source.node, config, measure_volumes(client, source.node, spec, config), types)
    node = choose_node(client.get('/nodes', context='listing the nodes of the cluster'), spec.node)
    storage = storage_of(source.volume)
    if source.volume not in list_volumes(client, node, storage, 'vztmpl'):
        problem = f'{source.volume} is not on storage {storage} of node {node}; download it first (pve_iso with content: vztmpl) or correct the volume'
        if not check_mode:
            raise SpecError('image', problem)
        warnings.append(f'image {problem}: the plan assumes an earlier task downloads it')
    return Creation(source, node)


def final_status(plan, observed):
    kinds = [action.kind for action in plan.actions]
    if DESTROY in kinds or (observed is None and not kinds):
        return 'absent'
    if START in kinds:
        return 'running'
    if SHUTDOWN in kinds or observed is None:
        return 'stopped'
    return observed.status


class Execution:
    """Runs a plan's actions in order on outcome.container (which a create or clone fills in), waiting for each task."""

    def __init__(self, client, outcome, timeout):
        self.client = client
        self.outcome = outcome
        self.timeout = timeout

    @property
    def ct(self):
        return self.outcome.container

    def run(self, actions):
        steps = {
            CREATE: self.create,
            CLONE: self.clone,
            CONFIGURE: self.configure,
            RESIZE: self.resize,
            SHUTDOWN: self.shutdown,
            START: self.start,
            DESTROY: self.destroy,
        }
        for action in actions:
            steps[action.kind](**action.params)

    def _task(self, method, path, context, idempotent=False, task_timeout=None, **params):
        result = self.client.run_task(method, path, context=context, idempotent=idempotent, task_timeout=task_timeout or self.timeout, **params)
        self.outcome.warnings.extend(f'{context}: {line}' for line in result.warnings)
        return result

    def _create(self, create_path, newid, context, owner_tag, notes='', retry_locked=True, **params):
        def send(vmid):
            # The owner record names the VMID this request asks for (_ownership): a clone's inherited one never does.
            description = with_record(notes, owner_tag, vmid)
            return self.client.create_vm(
                create_path,
                vmid,
                name=self.ct.name,
                task_timeout=self.timeout,
                context=context,
                guest_type=LXC,
                retry_locked=retry_locked,
                description=description,
                **params,
            )

        vmid, result = create_with_new_vmid(self.client, send, vmid=newid, task_timeout=self.timeout, context=context)
        self.outcome.warnings.extend(f'{context}: {line}' for line in result.warnings)
        return vmid

    def create(self, node, config, secrets, owner_tag, newid=None, pool=None):
        settings = {key: value for key, value in config.items() if key != 'hostname'}
        self.ct.node = node
        self.ct.vmid = self._create(guests_path(node, LXC), newid, f'creating container {self.ct.name} on {node}', owner_tag, pool=pool, **settings, **secrets)
        self.client.wait_unlocked(node, self.ct.vmid, self.timeout, LXC)

    def clone(self, vmid, node, name, full, owner_tag, newid=None, target=None, storage=None, pool=None, notes=''):
        context = f'cloning container {vmid} on {node} as {name}'

        def send():
            # A locked source is waited for in clone_in_turn, outside the VMID lock: no retry of it within.
            path = guest_path(node, vmid, '/clone', LXC)
            return self._create(path, newid, context, owner_tag, notes=notes, retry_locked=False, full=int(full), target=target, storage=storage, pool=pool)

        self.ct.vmid = clone_in_turn(self.client, node, vmid, time.monotonic() + self.timeout, context, send)
        self.ct.node = target or node
        # The clone keeps "lock: create" until its volumes are copied (src/PVE/API2/LXC.pm, clone_vm).
        self.client.wait_unlocked(self.ct.node, self.ct.vmid, self.timeout, LXC)

    def configure(self, **change):
        # A new mount point's volume is allocated by the write: a repeat would allocate another.
        allocates = any(key.startswith('mp') for key in change['set'])
        self.client.put(
            self.ct.path('/config'),
            context=f'updating the config of {self.ct}',
            idempotent=not allocates,
            delete=','.join(change['delete']) or None,
            **change['set'],
        )

    def resize(self, disk, size):
        self._task('PUT', self.ct.path('/resize'), f'growing {disk} of {self.ct} to {size}', idempotent=True, disk=disk, size=size)

    def shutdown(self, timeout=DEFAULT_SHUTDOWN_TIMEOUT):
        # PVE waits `timeout` seconds for the container to stop, then kills it (forceStop).
        self._power(
            'shutdown', 'stopped', f'shutting down {self.ct} (forced stop after {timeout} s)', task_timeout=self.timeout + timeout, timeout=timeout, forceStop=1
        )

    def start(self):
        self._power('start', 'running', f'starting {self.ct}')

    def _power(self, command, wanted, context, task_timeout=None, **params):
        deadline = time.monotonic() + (task_timeout or self.timeout)
        try:
            self._task('POST', self.ct.path(f'/status/{command}'), context, idempotent=True, task_timeout=task_timeout, **params)
        except PveApiError:
            # A repeat after a lost answer fails as "already running" / "not running": the state is what counts.
            if self.client.get(self.ct.path('/status/current'), context=context)['status'] != wanted:
                raise
            return
        wait_power_state(self.client, self.ct.node, self.ct.vmid, wanted, deadline, context, LXC)

    def destroy(self, **params):
        try:
            self._task('DELETE', self.ct.path(), f'destroying {self.ct}', idempotent=True, **params)
        except PveApiError:
            if not self._gone():
                raise

    def _gone(self):
        try:
            self.client.vm_config(self.ct.node, self.ct.vmid, guest_type=LXC)
        except PveApiError as exc:
            if is_missing(exc.reason):
                return True
            raise
        return False
