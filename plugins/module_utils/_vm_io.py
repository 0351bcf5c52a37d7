# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's I/O: observe one VM, plan its convergence (pure, ``_vm_plan.py``), then execute the plan's actions.

``reconcile_vm`` is the whole module run:
1. validate the options (``VmSpec``, ``dns_servers``): bad input fails before any request;
2. observe: one ``GET /cluster/resources`` finds the VM (``find_vm``); for a VM found, its status, its
   config with pending values merged, the config as it runs (``current=1``, while it runs) and the
   cloud-init drive's pending list; for a missing VM, the image resolved against the same listing, the
   source's config, and the nodes and storages for placement;
3. ``ip`` from DNS when it is not declared and ``dns_domain`` is (``_address.py``); the NoCloud seed of
   ``user_data`` (its content hash names the ISO; the ISO itself is built only to be uploaded);
4. plan, and in a real run execute the actions in order, waiting for every task and for a new VM's lock;
5. the address to reach the VM at: static, DNS, or the guest agent's under DHCP.

Check mode stops after 4's plan, so both modes report the plan's ``changed``, ``diff`` and ``changes``.

Every write can be repeated after a lost answer without harm, or is checked before it is repeated:
creates recover through ``create_vm``; config writes that allocate no disk, resizes to an absolute size
and cloud-init regeneration are idempotent; a power action or destroy whose outcome is unclear is
judged by the VM's state afterwards.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from ansible_collections.puls.proxmox.plugins.module_utils import _restart
from ansible_collections.puls.proxmox.plugins.module_utils._address import (
    agent_address,
    parse_dns_servers,
    resolve_dns,
    static_address,
)
from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._cidata import SeedIso, build_seed_iso, nocloud_seed
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_missing
from ansible_collections.puls.proxmox.plugins.module_utils._guest import DEFAULT_SHUTDOWN_TIMEOUT, guest_path, guests_path
from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, IMPORT, ImageSource, resolve_image
from ansible_collections.puls.proxmox.plugins.module_utils._ownership import with_record
from ansible_collections.puls.proxmox.plugins.module_utils._placement import choose_node, locality_volumes, uses_local_storage
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import require, tag_needs, vm_needs
from ansible_collections.puls.proxmox.plugins.module_utils._tag_style import as_stored
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import read_log, wait_power_state
from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import describe
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import (
    DEFAULT_SEED_STORAGE,
    SpecError,
    VmSpec,
    allocates_volume,
    as_bool,
    cloudinit_drive_key,
    disk_size,
    drive_volumes,
    grow_needed,
    parse_drive,
    parse_property_string,
    parse_size,
    seed_drive_key,
    seed_volume,
    storage_of,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import (
    BLANK,
    CONFIGURE,
    DELETE_VOLUME,
    DESTROY,
    REGENERATE_CLOUDINIT,
    RESIZE,
    SHUTDOWN,
    START,
    UPLOAD_SEED,
    Creation,
    Observed,
    find_vm,
    plan_vm,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vmid import create_with_new_vmid
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import delete_volume, list_volumes, upload_volume

DEFAULT_AGENT_TIMEOUT = 120


@dataclass
class Vm:
    """The VM acted on: found, created during the run, or (in check mode) still to be created (vmid None unless declared)."""

    vmid: int | None
    node: str | None
    name: str

    def path(self, suffix=''):
        return guest_path(self.node, self.vmid, suffix)

    def __str__(self):
        return f'VM {self.name} ({self.vmid} on {self.node})'


@dataclass
class Outcome:
    """What a run leaves behind for the result: the VM, its power status, and warnings for the user."""

    vm: Vm
    status: str
    warnings: list = field(default_factory=list)


@dataclass(frozen=True)
class Declared:
    """The VM the options declare: the checked spec (``ip`` from DNS when ``dns_domain`` says so) and user_data's seed."""

    spec: VmSpec
    dns_address: str | None = None
    seed: SeedIso | None = None

    @classmethod
    def from_params(cls, params):
        """Raises SpecError for what the user must change, before any API request; asks DNS when the VM's address is there."""
        spec = VmSpec.from_params(params)
        if spec.state == 'absent':
            return cls(spec)
        dns_address = None
        if spec.ip is None and spec.dns_domain:
            # Parsed only where used: a DNS server list the VM does not need (no dns_domain) cannot fail its run.
            dns_address = resolve_dns(f'{spec.name}.{spec.dns_domain}', parse_dns_servers(params.get('dns_servers')))
            spec = spec.with_resolved_ip(dns_address)
        seed = None if spec.user_data is None else nocloud_seed(user_data=spec.user_data, local_hostname=spec.name)
        return cls(spec, dns_address, seed)

    def seed_volume_on(self, storage):
        """The volume ID the seed ISO gets on storage (its content hash names it), or None without user_data."""
        return self.seed and seed_volume(storage, self.spec.name, self.seed.content_hash)


def seed_volume_for(client, declared, node, config=None):
    """The volume ID of user_data's seed ISO on the storage it goes to, or None without user_data.

    That storage is user_data_storage when declared. Else the one of the seed already attached with this content
    (config), so a VM keeps its seed until user_data changes; else the first shared storage with content iso on
    node; else local. A seed on local storage pins the VM to its node: qemu-server (PVE/QemuMigrate.pm,
    scan_local_volumes) refuses to migrate a "local cdrom image", and HA cannot relocate the VM.
    """
    if declared.seed is None:
        return None
    storage = declared.spec.user_data_storage
    if storage is None:
        key = seed_drive_key(config or {})
        current = parse_drive(config[key])[0] if key else ''
        if current.partition(':')[2] == declared.seed_volume_on(DEFAULT_SEED_STORAGE).partition(':')[2]:
            storage = current.partition(':')[0]
        else:
            storage = next(iter(shared_iso_storages(client, node)), DEFAULT_SEED_STORAGE) if node else DEFAULT_SEED_STORAGE
    return declared.seed_volume_on(storage)


def shared_iso_storages(client, node):
    """The shared storages enabled and active on node with content iso, by name."""
    items = client.get(f'/nodes/{node}/storage', content='iso', enabled=1, context=f'listing the ISO storages of {node}')
    return sorted(item['storage'] for item in items or () if as_bool(item.get('shared')) and as_bool(item.get('active', 1)))


def reconcile_vm(client, params, check_mode=False):
    """The module's run: returns the result dict; raises SpecError for what the user must change, PveApiError from PVE."""
    declared = Declared.from_params(params)
    spec = declared.spec
    timeout = params.get('timeout') or DEFAULT_TASK_TIMEOUT
    resources = client.cluster_vms()
    found = find_vm(resources, spec.name, spec.vmid)
    observed = observe(client, found) if found else None
    if observed is not None:
        # How a refusal of a clone made outside the collection names its source (_ownership).
        observed = replace(observed, names={int(entry['vmid']): describe(entry) for entry in resources})
    # Only a plan counts on images that an earlier task of the same run makes (pve_iso): a real run finds them made.
    planned_images = (params.get('planned_images') or ()) if check_mode else ()
    spec = as_stored(client, spec, observed.config.get('tags') if observed else None)
    creation = None if observed is not None or spec.state == 'absent' else plan_creation(client, spec, resources, planned_images)
    seed = seed_volume_for(client, declared, observed.node if observed else creation and creation.node, observed.config if observed else None)
    plan = plan_vm(spec, observed, creation, seed)

    vm = Vm(observed.vmid, observed.node, spec.name) if observed else Vm(spec.vmid, creation and creation.node, spec.name)
    outcome = Outcome(vm, final_status(plan, observed))
    tags_now = (observed.config if observed else (creation and creation.source_config) or {}).get('tags')
    needs = [*vm_needs(plan.actions, vm.vmid, creation and creation.source_config), *tag_needs(plan.actions, tags_now)]
    require(client, needs, f'the plan for VM {spec.name}')
    if not check_mode:
        Execution(client, outcome, timeout, declared.seed).run(plan.actions)
    address = None
    if outcome.status != 'absent':
        base_config = observed.config if observed else creation.source_config
        # In check mode only a VM running now can answer; one this run would start is not running yet.
        can_ask = outcome.status == 'running' and (not check_mode or bool(observed and observed.running))
        address = reach_address(client, spec, outcome, base_config, declared.dns_address, can_ask, params.get('agent_timeout'))
    return {
        'changed': plan.changed,
        'diff': plan.diff,
        'vmid': outcome.vm.vmid,
        'node': outcome.vm.node,
        'status': outcome.status,
        'address': address,
        'reboot_required': list(plan.reboot_required),
        'changes': list(plan.changes),
        'warnings': outcome.warnings,
    }


# ---------------------------------------------------------------------------------------------- observing


def observe(client, entry, restart_matters=True):
    """The Observed VM of a /cluster/resources entry: status, config (pending merged), running config, cloud-init pending.

    Without ``restart_matters`` it is one request, the config: the status is the listing's, and what waits for a
    restart is not read. That is for a plan in ``apply_mode: report``, where what waits changes no action of the
    plan (it only fills ``reboot_required``).
    """
    vmid, node = int(entry['vmid']), entry['node']
    vm = Vm(vmid, node, entry.get('name') or '')
    config = client.vm_config(node, vmid)
    if not restart_matters and entry.get('status') in ('running', 'stopped'):
        return Observed(vmid, node, entry['status'], config, started=guest_boot(client, vmid, config, boot_started(entry)))
    status_now = read_status(client, vm)
    status = status_now['status']
    current = client.vm_config(node, vmid, current=True) if status == 'running' else None
    cloudinit_pending = frozenset()
    if cloudinit_drive_key(config):
        items = client.get(vm.path('/cloudinit'), context=f'reading the cloud-init drive of {vm}') or ()
        cloudinit_pending = frozenset(item['key'] for item in items if 'pending' in item or as_bool(item.get('delete')))
    return Observed(vmid, node, status, config, current, cloudinit_pending, started=guest_boot(client, vmid, config, boot_started(status_now)))


def guest_boot(client, vmid, config, started):
    """When the guest's running boot began: ``started`` (its QEMU process's start), unless the restart record in its
    Notes names an earlier boot and no task since booted the guest (a live migration or a resume after hibernation
    started the process: ``_restart.restarted``), which it then still runs. Only then are the tasks read: one
    ``GET /nodes``, one ``GET /nodes/{node}/tasks`` per online node, and the log of each start since the record until
    one is a boot."""
    record = _restart.read_record(config.get('description'))
    if record is None or record.started is None or started is None or record.same_boot(vmid, started):
        return started
    since = record.started + _restart.START_TOLERANCE
    online = [item['node'] for item in client.get('/nodes', context='listing the nodes of the cluster') or () if item.get('status') == 'online']
    tasks = [
        task
        for node in online
        for task in client.get(
            f'/nodes/{node}/tasks', context=f'reading the tasks of VM {vmid} on node {node}', vmid=vmid, since=since, source='all', limit=1000
        )
        or ()
    ]
    return started if _restart.restarted(tasks, vmid, since, lambda task: read_log(client, task['upid'])) else record.started


def boot_started(status):
    """When a running VM's QEMU process started, in epoch seconds of this machine's clock, from the ``uptime`` of a
    ``/cluster/resources`` entry or of ``status/current`` (``_restart``); None when the VM is not running or PVE gave none."""
    if status.get('status') != 'running' or status.get('uptime') is None:
        return None
    return int(time.time()) - int(status['uptime'])


def read_status(client, vm):
    return client.get(vm.path('/status/current'), context=f'reading the status of {vm}')


def plan_creation(client, spec, resources, planned_images=()):
    """How the missing VM is made: its image resolved, the node chosen, the clone source's config read.

    ``planned_images`` (check mode) lists the import volumes that the run makes before the VM, each with its nodes.
    """
    node_status = client.get('/nodes', context='listing the nodes of the cluster')
    if spec.image is None:
        # No image: an empty VM (_vm_plan), placed as any VM that depends on no source.
        return Creation(ImageSource(BLANK), choose_node(node_status, spec.node, spec.nodes))
    source = resolve_image(spec.image, resources, spec.linked_clone)
    if source.kind == CLONE:
        source_config = client.vm_config(source.node, source.vmid)
        shared = shared_storages(client, source.node)
        local = uses_local_storage(locality_volumes(source_config), shared)
        # A full clone's declared storage must be shared for another node (clone_vm); a linked clone has none.
        storage = None if spec.linked_clone else spec.storage
        node = choose_node(
            node_status,
            spec.node,
            spec.nodes,
            source.node,
            local,
            storage,
            storage_is_local=bool(storage) and storage not in shared,
            storage_nodes=storage_nodes(client, storage) if storage in shared else None,
        )
        return Creation(source, node, source_config)
    holders = import_volume_nodes(client, source.volume, node_status, [spec.node] if spec.node else spec.nodes, planned_nodes(planned_images, source.volume))
    if spec.node and spec.node not in holders:
        raise SpecError(
            'node',
            f'is {spec.node}, but image {source.volume} is not on that node (it is on {", ".join(holders)}); set node to one of those, or copy the image there',
        )
    return Creation(source, choose_node(node_status, spec.node, holders))


def shared_storages(client, node):
    return [item['storage'] for item in client.get(f'/nodes/{node}/storage', context=f'listing the storages of {node}') if as_bool(item.get('shared'))]


def storage_nodes(client, storage):
    """The nodes a storage is enabled on (/cluster/resources lists it once per such node); None when this credential
    sees it on none (it lacks Datastore.Audit there): PVE's clone then decides."""
    nodes = [
        item['node']
        for item in client.get('/cluster/resources', type='storage', context='listing the storages of the cluster')
        if item.get('storage') == storage and item.get('node')
    ]
    return nodes or None


def planned_nodes(planned_images, volume):
    """The nodes that planned_images (pve_vm's option) say will hold volume once the run's earlier tasks made it."""
    return {node for image in planned_images or () if image.get('volume') == volume for node in image.get('nodes') or ()}


def import_volume_nodes(client, volume, node_status, candidates, planned=frozenset()):
    """The online nodes (among candidates, or all) whose storage holds volume, or will (planned, in check mode); SpecError
    naming image when none does."""
    storage = storage_of(volume)
    online = [item['node'] for item in node_status if item.get('status') == 'online']
    asked = [node for node in (candidates or online) if node in online]
    holders = []
    for node in sorted(asked):
        enabled = [
            item['storage'] for item in client.get(f'/nodes/{node}/storage', context=f'listing the storages of {node}') if as_bool(item.get('active'), True)
        ]
        if storage not in enabled:
            continue
        if node in planned:
            holders.append(node)
            continue
        content = client.get(f'/nodes/{node}/storage/{storage}/content', context=f'listing storage {storage} on {node}')
        if any(item.get('volid') == volume for item in content):
            holders.append(node)
    if not holders:
        raise SpecError(
            'image',
            f'{volume} does not exist on storage {storage} of {", ".join(sorted(asked)) or "any online node"}; '
            'download it first (pve_iso, content import) or correct the volume name',
        )
    return holders


# ---------------------------------------------------------------------------------------------- executing


def final_status(plan, observed):
    """The VM's power status once the plan has run: absent, running or stopped."""
    kinds = [action.kind for action in plan.actions]
    if DESTROY in kinds or (observed is None and not kinds):
        return 'absent'
    if START in kinds:
        return 'running'
    if SHUTDOWN in kinds or observed is None:
        return 'stopped'
    return observed.status


class Execution:
    """Runs a plan's actions in order on outcome.vm (which a clone or import fills in), waiting for each task;
    seed is the NoCloudSeed of user_data, when declared."""

    def __init__(self, client, outcome, timeout, seed=None):
        self.client = client
        self.outcome = outcome
        self.timeout = timeout
        self.seed = seed

    @property
    def vm(self):
        return self.outcome.vm

    def run(self, actions):
        steps = {
            CLONE: self.clone,
            IMPORT: self.create_by_import,
            CONFIGURE: self.configure,
            RESIZE: self.resize,
            REGENERATE_CLOUDINIT: self.regenerate_cloudinit,
            SHUTDOWN: self.shutdown,
            START: self.start,
            DESTROY: self.destroy,
            UPLOAD_SEED: self.upload_seed,
            DELETE_VOLUME: self.remove_volume,
        }
        for action in actions:
            steps[action.kind](**action.params)

    def _task(self, method, path, context, idempotent=False, task_timeout=None, **params):
        result = self.client.run_task(method, path, context=context, idempotent=idempotent, task_timeout=task_timeout or self.timeout, **params)
        self.outcome.warnings.extend(f'{context}: {line}' for line in result.warnings)
        return result

    def _create(self, create_path, newid, context, owner_tag=None, notes='', **params):
        def send(vmid):
            # The owner record names the VMID this request asks for (_ownership): a clone's inherited one never does.
            record = {} if owner_tag is None else {'description': with_record(notes, owner_tag, vmid)}
            return self.client.create_vm(create_path, vmid, name=self.vm.name, task_timeout=self.timeout, context=context, **params, **record)

        vmid, result = create_with_new_vmid(self.client, send, vmid=newid, task_timeout=self.timeout, context=context)
        self.outcome.warnings.extend(f'{context}: {line}' for line in result.warnings)
        return vmid

    def clone(self, vmid, node, name, full, newid=None, target=None, storage=None, pool=None, notes='', owner_tag=None):
        context = f'cloning VM {vmid} on {node} as {name}'
        self.vm.vmid = self._create(
            guest_path(node, vmid, '/clone'), newid, context, owner_tag=owner_tag, notes=notes, full=full, target=target, storage=storage, pool=pool
        )
        self.vm.node = target or node
        # A clone's config keeps "lock: clone" until its disks are copied (qemu-server PVE/API2/Qemu.pm, clone_vm).
        self.client.wait_unlocked(self.vm.node, self.vm.vmid, self.timeout)

    def create_by_import(self, node, config, newid=None, pool=None, owner_tag=None):
        settings = {key: value for key, value in config.items() if key != 'name'}
        self.vm.node = node
        self.vm.vmid = self._create(guests_path(node), newid, f'creating VM {self.vm.name} on {node}', owner_tag=owner_tag, pool=pool, **settings)
        self.client.wait_unlocked(node, self.vm.vmid, self.timeout)

    def configure(self, **change):
        settings = change['set']
        # A drive allocated by the write ("STORAGE:cloudinit", "STORAGE:32") must not be sent twice: the second would fail
        # or allocate another volume.
        allocates = any(allocates_volume(settings[key]) for key in drive_volumes(settings))
        self._task(
            'POST',
            self.vm.path('/config'),
            f'updating the config of {self.vm}',
            idempotent=not allocates,
            delete=','.join(change['delete']) or None,
            **settings,
        )

    def resize(self, disk, size, verify_size=False):
        if verify_size:
            # After an import the image's own size is known only now.
            config = self.client.vm_config(self.vm.node, self.vm.vmid)
            if not grow_needed(parse_size(size), disk_size(config, disk), disk):
                return
        self._task('PUT', self.vm.path('/resize'), f'growing {disk} of {self.vm} to {size}', idempotent=True, disk=disk, size=size)

    def regenerate_cloudinit(self):
        self.client.put(self.vm.path('/cloudinit'), context=f'regenerating the cloud-init drive of {self.vm}', idempotent=True)

    def shutdown(self, timeout=DEFAULT_SHUTDOWN_TIMEOUT):
        # PVE waits `timeout` seconds for the guest to power off, then stops it (forceStop).
        self._power(
            'shutdown', 'stopped', f'shutting down {self.vm} (forced stop after {timeout} s)', task_timeout=self.timeout + timeout, timeout=timeout, forceStop=1
        )

    def start(self):
        self._power('start', 'running', f'starting {self.vm}')

    def _power(self, command, wanted, context, task_timeout=None, **params):
        # The task's timeout bounds the whole operation, the wait for the state included.
        deadline = time.monotonic() + (task_timeout or self.timeout)
        try:
            self._task('POST', self.vm.path(f'/status/{command}'), context, idempotent=True, task_timeout=task_timeout, **params)
        except PveApiError:
            # A repeat after a lost answer fails as "already running" / "not running": the VM's state is what counts.
            if read_status(self.client, self.vm)['status'] != wanted:
                raise
            return
        # An HA-managed VM's task only queues the request, and the state comes later (qemu-server Qemu.pm vm_start,
        # vm_shutdown, vm_stop): after any power task, wait for the state itself.
        wait_power_state(self.client, self.vm.node, self.vm.vmid, wanted, deadline, context)

    def destroy(self, **params):
        try:
            self._task('DELETE', self.vm.path(), f'destroying {self.vm}', idempotent=True, **params)
        except PveApiError:
            # A repeat after a lost answer finds the VM gone.
            if not self._gone():
                raise

    def upload_seed(self, volid):
        storage, _colon, name = volid.partition(':')
        # The name holds the content hash: a file already there (an earlier run that failed later) is this seed.
        if volid not in list_volumes(self.client, self.vm.node, storage, 'iso'):
            upload_volume(self.client, self.vm.node, storage, name.rpartition('/')[2], build_seed_iso(self.seed).data, 'iso', task_timeout=self.timeout)

    def remove_volume(self, volid):
        delete_volume(self.client, self.vm.node, volid, task_timeout=self.timeout)

    def _gone(self):
        try:
            self.client.vm_config(self.vm.node, self.vm.vmid)
        except PveApiError as exc:
            if is_missing(exc.reason):
                return True
            raise
        return False


# ---------------------------------------------------------------------------------------------- the address


def reach_address(client, spec, outcome, base_config, dns_address, can_ask, agent_timeout):
    """The IPv4 address to reach the VM at, or None (with a warning saying why, when the VM runs and should have one)."""
    if spec.ip is not None and spec.ip != 'dhcp':
        return str(spec.ip.ip)
    if dns_address:
        return dns_address
    if spec.ip is None and spec.user_data is None:
        # ipconfig0 is not managed: the VM keeps (or a clone inherits) its own.
        address = static_address(base_config.get('ipconfig0'))
        if address:
            return address
    vm = outcome.vm
    if not can_ask:
        return None
    if not as_bool(parse_property_string(base_config.get('agent'), 'enabled').get('enabled', 0)):
        outcome.warnings.append(
            f'the address of {vm} is unknown: it takes its address by DHCP and its config does not enable '
            'the QEMU guest agent, which would report it; set agent: 1 on the VM or its template, declare '
            'ip, or publish the name in DNS (dns_domain, dns_servers)'
        )
        return None
    # An agent that is not up long after boot is not coming: wait only until the VM has been up agent_timeout seconds.
    limit = DEFAULT_AGENT_TIMEOUT if agent_timeout is None else agent_timeout
    uptime = int(read_status(client, vm).get('uptime') or 0)
    address, last_answer = agent_address(client, vm.node, vm.vmid, max(0, limit - uptime))
    if address is None:
        outcome.warnings.append(
            f'the address of {vm} is unknown: it takes its address by DHCP, and its guest agent reported '
            f'none by {max(limit, uptime)} s after boot ({last_answer}); check that qemu-guest-agent is '
            'installed and running in the guest, or declare ip, or publish the name in DNS (dns_domain)'
        )
    return address
