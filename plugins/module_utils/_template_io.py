# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_template's run: read the cluster, decide (``_template_plan.py``), and in a real run carry the plan out.

Every state reads first and plans before it writes, and check mode stops after the plan, so both
modes report the same ``changed`` and ``diff``. Refusals (a wrong VMID, an ambiguous name, a
template that is protected, foreign or still used by linked clones) come from the reads, before
any write.

``converted`` turns the build VM into the template, in this order: graceful shutdown (forced stop
after ``shutdown_timeout``); one config write that deletes the build-time cloud-init settings, sets
the Notes (provision block, spec block, and the owner record naming the template's own VMID) and puts an empty cloud-init drive in place of a
user_data seed ISO; regeneration of the cloud-init drive, which is then empty of them; deletion of
the build's own seed ISO; ``POST .../template``. Then the previous template of the same name, if
any, is retired (renamed ``NAME-<hash>``, tagged ``puls-retired``), the new one takes the name and
its tags (``puls-building`` off, the owner tag on) in one write, and the previous one is destroyed
unless linked clones use it or it is protected. The name thus moves in two consecutive renames, an
old template is never destroyed before its successor exists, and a run waiting for the build (it
looks for the tag) never sees the moment in between as its end.

A build container's conversion deletes no cloud-init key: its DNS settings stay, and its network devices' static
addresses become DHCP/SLAAC (``_template_plan.build_addresses``). A build container on a storage that cannot hold a
template is refused before any write. PVE answers its ``POST .../template`` with no task, which ``run_conversion``
finds in the node's task list and waits for.

Power, config writes and destroys go through pve_vm's ``Execution``, which waits for every task and
judges a repeated power action or destroy by the VM's state.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _ct_io, _ct_privileges, _linked, _ownership, _template_plan
from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import source_of
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_missing
from ansible_collections.puls.proxmox.plugins.module_utils._files_record import read_notes
from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, QEMU, guest_path
from ansible_collections.puls.proxmox.plugins.module_utils._image import resolve_image
from ansible_collections.puls.proxmox.plugins.module_utils._notes import NotesTooLongError
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import config_needs, conversion_needs, require
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import TaskResult, task_upids, wait_forked_task
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError, as_bool, cloudinit_drive_key, normalize_tags, tag_set
from ansible_collections.puls.proxmox.plugins.module_utils._vm_io import Execution, Outcome, Vm

# PVE's refusal to destroy a base volume (QemuServer.pm destroy_vm says "linked cloned").
_BASE_IN_USE = 'is still in use by linked clone'
# The conversion's failure on a storage without the template feature (pve-container src/PVE/LXC.pm, template_create).
_NO_TEMPLATE_FEATURE = 'Template feature is not available'
# The task of a container's conversion (pve-container src/PVE/API2/LXC.pm, template: fork_worker('vztemplate', ...)).
CONVERSION_TASK = 'vztemplate'
DESTROY_PARAMS = {'purge': 1, 'destroy-unreferenced-disks': 1}


def reconcile(client, request: _template_plan.TemplateRequest, check_mode: bool = False, now=time.time, sleep=time.sleep) -> dict:
    """The module's run for ``request``; returns the result dict. SpecError for what the user must change."""
    if request.state == 'present':
        return wait_for_build(client, request, now, sleep)
    resources = client.cluster_vms()
    if request.state == 'converted':
        return convert(client, request, resources, check_mode)
    found = _template_plan.find_template(resources, request.name, request.vmid, request.guest_type)
    if request.state == 'retired':
        return retire(client, request, found, check_mode)
    return remove(client, request, resources, found, check_mode)


def _result(entry, changed=False, diff=None, **facts):
    return dict(changed=changed, diff=diff, vmid=int(entry['vmid']) if entry else None, node=entry.get('node') if entry else None, **facts)


def _execution(client, entry, request, status='stopped'):
    """pve_vm's or pve_container's Execution on the guest: both wait for each task and judge a repeated power action
    or destroy by the guest's state, and take the same config writes (``configure(set=..., delete=...)``)."""
    name = entry.get('name') or ''
    if request.guest_type == LXC:
        return _ct_io.Execution(client, _ct_io.Outcome(_ct_io.Container(int(entry['vmid']), entry['node'], name), status), request.timeout)
    return Execution(client, Outcome(Vm(int(entry['vmid']), entry['node'], name), status), request.timeout)


def _config(client, entry, request):
    return client.vm_config(entry['node'], entry['vmid'], guest_type=request.guest_type)


# ---------------------------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class Wanted:
    """The declaration's block entries, and how its resolved image is named (for reasons)."""

    entries: dict[str, str]
    image: str | None = None

    @property
    def spec_hash(self) -> str:
        return self.entries[_template_plan.SPEC_KEY]


def wanted(client, request: _template_plan.TemplateRequest, resources, template_vmid=None) -> Wanted:
    """The spec entries of the request, with ``spec.image`` resolved to its identity."""
    if request.spec is None:
        raise ValueError(f'template {request.name}: wanted() needs the spec the request declares')
    identity, image = image_identity(client, request.spec, resources, template_vmid, request.guest_type)
    return Wanted(_template_plan.spec_entries(request.spec, identity, request.provision_hashes or {}), image)


def image_identity(client, spec, resources, template_vmid=None, guest_type=QEMU) -> tuple[str | None, str | None]:
    """(identity hashed into the spec, description) of ``spec['image']``: a template's VMID and name, or a volume (an
    import volume, a container's OS template) with the source pve_iso recorded for it in a node's notes. (None, None)
    without an image. A container template's image is resolved as pve_container resolves it."""
    if not isinstance(spec, Mapping) or spec.get('image') is None:
        return None, None
    try:
        source = source_of(str(spec['image']), resources) if guest_type == LXC else resolve_image(spec['image'], resources)
    except SpecError as exc:
        raise SpecError('spec', str(exc)) from None
    if source.vmid is not None:
        if template_vmid is not None and source.vmid == template_vmid:
            raise SpecError(
                'spec', f'image {spec["image"]!r} is the template itself ({source.describe()}); a template cannot be built from itself: name its base image'
            )
        return f'{source.vmid}:{source.name}', source.describe()
    online = sorted(item['node'] for item in client.get('/nodes', context='listing the nodes of the cluster') if item.get('status') == 'online')
    record = next((found for found in (read_notes(client, node).entries.get(source.volume) for node in online) if found), None)
    return f'{source.volume}@{record or "unrecorded"}', source.describe()


# ---------------------------------------------------------------------------------------------- present


def wait_for_build(client, request, now=time.time, sleep=time.sleep) -> dict:
    """query's answer once no build of the template runs, asked again every request.wait_delay seconds for at most
    request.wait seconds (the last answer when the time is up), with the seconds waited; each look at a running build
    is noted for the action plugin's progress line."""
    started = now()
    progress = getattr(client, 'progress', None)
    while True:
        resources = client.cluster_vms()
        result = query(client, request, resources, _template_plan.find_template(resources, request.name, request.vmid, request.guest_type))
        waited = now() - started
        build, left = result['building'], request.wait - waited
        if build is None or left <= 0:
            return dict(result, waited=int(waited))
        if progress is not None:
            what = f'waiting for another build of template {request.name} to end: build VM {build["name"]} ({build["vmid"]} on {build["node"]})'
            progress.note(what, started=started)
        sleep(min(request.wait_delay, left))


def query(client, request, resources, found) -> dict:
    """Whether the template exists and is current against the spec (if given), and whether a build of it runs; never writes."""
    build = _template_plan.find_building(resources, request.name, request.guest_type)
    facts: dict[str, Any] = {'building': None if build is None else {'vmid': int(build['vmid']), 'node': build['node'], 'name': build['name']}}
    want = None
    if request.spec is not None:
        want = wanted(client, request, resources, None if found is None else int(found['vmid']))
        facts['spec_hash'] = want.spec_hash
    if found is None:
        _check_spec_storages(client, request)
        return _result(None, name=None, current=False, reason=f'template {request.name} does not exist', **facts)
    reasons = []
    if want is not None:
        config = _config(client, found, request)
        reasons = _template_plan.decide(config.get('description'), config, want.entries, request.spec, request.provision_hashes or {}, want.image)
    if reasons:
        _check_spec_storages(client, request)
    return _result(found, name=found.get('name'), current=not reasons, reason='; '.join(reasons), **facts)


def _storage_types(client):
    return _linked.storage_types(client.get('/cluster/resources', type='storage', context='listing the storages of the cluster'))


def _check_spec_storages(client, request):
    """Refuse, before a build, a container template whose spec puts its volumes on a storage that cannot hold a template
    (the reconcile role's spec is pve_container's options): the bake would build and provision the container, and
    only its conversion would fail. A check run thus says so too."""
    if request.guest_type != LXC or not isinstance(request.spec, Mapping):
        return
    places = _template_plan.declared_storages(request.spec)
    if not places:
        return
    refusal = _template_plan.template_storage_refusal(places, _storage_types(client), request.name)
    if refusal:
        raise SpecError('spec', refusal)


# ---------------------------------------------------------------------------------------------- retired


def _check_owned(entry, config, request, doing):
    """Refuse a template that is not this collection's: without the owner tag, or with an owner record naming another
    VMID (a clone of one of its templates, made and converted by hand). One with the tag and no record (made by an
    earlier release) is named by the declaration, so it is managed (_ownership)."""
    owner = _ownership.state(config, int(entry['vmid']), request.owner_tag)
    if owner == _ownership.FOREIGN:
        raise SpecError(
            'name',
            f'{doing} refused: {_template_plan.describe(entry)} lacks the owner tag {request.owner_tag!r}, so it was '
            'not made by this collection; add the tag to it in PVE to let pve_template manage it, or correct '
            'name/vmid',
        )
    if owner == _ownership.INHERITED:
        recorded = _ownership.recorded_vmid(config.get('description'), request.owner_tag)
        raise SpecError(
            'name',
            f'{doing} refused: {_template_plan.describe(entry)} carries the owner tag {request.owner_tag!r} but an '
            f'owner record in its Notes naming VMID {recorded}, not its own: it was copied from a guest of this '
            'collection outside it; correct name/vmid, or remove it by hand',
        )


def retire(client, request, found, check_mode) -> dict:
    """Rename the template NAME-<hash> and tag it puls-retired; it stays, for the linked clones that use it."""
    if found is None:
        return _result(None, name=None)
    config = _config(client, found, request)
    name_key = _template_plan.name_key(request.guest_type)
    if _template_plan.is_retired_version(config.get(name_key), config.get('tags'), request.name):
        return _result(found, name=config.get(name_key))
    _check_owned(found, config, request, 'retiring')
    new_name = _template_plan.retire_name(request.name, int(found['vmid']), config.get('description'))
    tags = _template_plan.retired_tags(config.get('tags'))
    diff = {
        'before': {'name': config.get(name_key), 'tags': sorted(tag_set(config.get('tags')))},
        'after': {'name': new_name, 'tags': sorted(tag_set(tags))},
    }
    if not check_mode:
        _execution(client, found, request).configure(set={name_key: new_name, 'tags': tags}, delete=[])
    return _result(found, True, diff, name=new_name)


# ---------------------------------------------------------------------------------------------- absent


def linked_clones(client, resources, template_vmid, template_config=None, ignore=(), guest_type=QEMU) -> list[str]:
    """The guests that use, or may use, the template's base volumes as linked clones, as 'name (VMID)'; reads every
    other VM's config. Where the storage names a clone's volume after its base, the name tells
    (``_template_plan.uses_base``); on LVM-thin, where it does not, what the guest inherited from the template does
    (``_linked``), which needs the template's config (read when not given) and the storages' types (one listing, read
    only when some guest could be such a clone). ``ignore``: VMIDs counted only by their volume names (the build VM a
    conversion turns into a template: its volumes become base volumes of their own). A container template's clones are
    containers, judged the same way by their root file systems and mount points."""
    named, others = [], []
    for entry in _template_plan.linked_clone_candidates(resources, template_vmid, guest_type):
        try:
            config = client.vm_config(entry['node'], entry['vmid'], guest_type=guest_type)
        except PveApiError as exc:
            if is_missing(exc.reason):  # destroyed since the listing (another task of the run, say)
                continue
            raise
        if _template_plan.uses_base(config, template_vmid):
            named.append(entry)
        elif int(entry['vmid']) not in ignore:
            others.append((entry, config))
    if others and template_config is None:
        template_config = _template_config(client, resources, template_vmid, guest_type)
    if others and template_config and _linked.needs_storage_types(template_config, template_vmid, [c for _e, c in others]):
        types = _storage_types(client)
        named += [entry for entry, config in others if _linked.may_be_linked(template_config, template_vmid, config, types)]
    return [f"{entry.get('name')} ({entry['vmid']})" for entry in sorted(named, key=lambda entry: int(entry['vmid']))]


def _template_config(client, resources, template_vmid, guest_type=QEMU):
    """The template's config, or None when it is not listed or went away since the listing."""
    entry = next((item for item in resources if int(item['vmid']) == int(template_vmid)), None)
    if entry is None:
        return None
    try:
        return client.vm_config(entry['node'], entry['vmid'], guest_type=guest_type)
    except PveApiError as exc:
        if is_missing(exc.reason):
            return None
        raise


def remove(client, request, resources, found, check_mode) -> dict:
    """Destroy the template with its disks; refused while linked clones use it, when protected or not owned."""
    if found is None:
        return _result(None, diff={'before': {'state': 'absent'}, 'after': {'state': 'absent'}}, name=None)
    config = _config(client, found, request)
    _check_owned(found, config, request, 'state absent')
    what = _template_plan.describe(found)
    if _template_plan.protected(config):
        raise SpecError('state', f'absent refused: {what} is protected; turn protection off in PVE first if it really is to go')
    users = linked_clones(client, resources, int(found['vmid']), config, guest_type=request.guest_type)
    if users:
        raise SpecError(
            'state',
            f'absent refused: linked clones use {what}: {", ".join(users)}; destroy them first, or retire '
            'the template (state: retired) to keep it under another name',
        )
    diff = {'before': {'state': 'present', 'vmid': int(found['vmid']), 'name': found.get('name')}, 'after': {'state': 'absent'}}
    if not check_mode:
        try:
            _execution(client, found, request).destroy(**DESTROY_PARAMS)
        except PveApiError as exc:
            if _BASE_IN_USE not in (exc.reason or ''):
                raise
            raise SpecError('state', f'absent refused by PVE: {exc.reason}; destroy the linked clones first, or retire the template (state: retired)') from None
    return _result(found, True, diff, name=found.get('name'))


# ---------------------------------------------------------------------------------------------- converted


@dataclass
class Conversion:
    """What converting the build VM does, read and decided before anything is written."""

    build: Mapping[str, Any]
    config: Mapping[str, Any]
    status: str
    notes: str
    tags: str
    strip: list[str]
    seed: _template_plan.SeedDrive | None = None
    previous: Mapping[str, Any] | None = None
    previous_config: Mapping[str, Any] = field(default_factory=dict)
    previous_users: list[str] = field(default_factory=list)
    name_key: str = 'name'  # the config key of the guest's name (_template_plan.name_key)
    addresses: dict[str, str] = field(default_factory=dict)  # a build container's netN rewritten (_template_plan.build_addresses)

    @property
    def destroy_previous(self) -> bool:
        return self.previous is not None and not self.previous_users and not _template_plan.protected(self.previous_config)

    @property
    def retired_tags(self) -> str:
        return _template_plan.retired_tags(self.previous_config.get('tags'))

    def retired_name(self, name):
        return _template_plan.retire_name(name, int(self.previous['vmid']), self.previous_config.get('description'))

    def diff(self, name) -> dict:
        config = self.config
        before = {
            'vmid': int(self.build['vmid']),
            'name': config.get(self.name_key),
            'template': False,
            'status': self.status,
            'tags': sorted(tag_set(config.get('tags'))),
            'notes': config.get('description') or '',
        }
        after = dict(before, name=name, template=True, status='stopped', tags=sorted(tag_set(self.tags)), notes=self.notes)
        for key in self.strip:
            before[key] = _template_plan.show_setting(key, config[key])
            after[key] = None
        for key, value in self.addresses.items():
            before[key], after[key] = config[key], value
        if self.seed is not None:
            self.seed.diff(before, after)
        if self.previous is not None:
            before['previous'] = {'vmid': int(self.previous['vmid']), 'name': name, 'state': 'present'}
            after['previous'] = {'vmid': int(self.previous['vmid']), 'name': self.retired_name(name), 'state': 'absent' if self.destroy_previous else 'retired'}
        return {'before': before, 'after': after}


def convert(client, request, resources, check_mode) -> dict:
    """Convert build VM ``request.vmid`` into template ``request.name``; unchanged when it already is that template."""
    build = _template_plan.find_build_vm(resources, request.vmid, request.guest_type)
    config = _config(client, build, request)
    if as_bool(config.get('template')):
        # Converted already (by an earlier run) when it is this template built from this spec.
        named = config.get(_template_plan.name_key(request.guest_type)) == request.name
        want = wanted(client, request, resources, request.vmid) if named else None
        if want is not None and _template_plan.recorded_entries(config.get('description')).get(_template_plan.SPEC_KEY) == want.spec_hash:
            return _result(build, name=request.name, current=True, reason='', spec_hash=want.spec_hash, previous=None)
        raise SpecError(
            'vmid',
            f'{request.vmid} is already {_template_plan.describe(build)}, not the build VM of {request.name!r} '
            'with this spec; give the VMID of the provisioned build VM',
        )
    if _template_plan.BUILDING_TAG not in normalize_tags(config.get('tags')):
        raise SpecError(
            'vmid',
            f'{request.vmid} is {_template_plan.describe(build)}, which lacks the tag {_template_plan.BUILDING_TAG!r} '
            'that marks a build VM; tag it so if it really is to become a template (a guard against '
            'converting a server by a wrong VMID)',
        )
    want = wanted(client, request, resources)
    plan = plan_conversion(client, request, resources, build, config, want)
    write_needs = _ct_privileges.config_needs if request.guest_type == LXC else config_needs
    require(client, conversion_needs(plan, write_needs), f'converting {_template_plan.describe(build)} into template {request.name}')
    action = 'destroyed' if plan.destroy_previous else 'retired'
    warnings: list[str] = []
    if not check_mode:
        action, warnings = execute_conversion(client, request, plan)
    previous = None
    if plan.previous is not None:
        previous = {'vmid': int(plan.previous['vmid']), 'name': plan.retired_name(request.name), 'linked_clones': plan.previous_users, 'action': action}
    return _result(
        build, True, plan.diff(request.name), name=request.name, current=True, reason='', spec_hash=want.spec_hash, previous=previous, warnings=warnings
    )


def plan_conversion(client, request, resources, build, config, want) -> Conversion:
    others = [entry for entry in resources if int(entry['vmid']) != request.vmid]
    previous = _template_plan.find_template(others, request.name, guest_type=request.guest_type)
    previous_config, users = {}, []
    if previous is not None:
        previous_config = _config(client, previous, request)
        _check_owned(previous, previous_config, request, f'replacing the template {request.name!r}')
        users = linked_clones(client, resources, int(previous['vmid']), previous_config, ignore=(request.vmid,), guest_type=request.guest_type)
    try:
        notes = _template_plan.template_notes(config.get('description'), want.entries, request.provision_hashes or {})
        # The template's owner record names its own VMID: a clone of it inherits a record that is not its own.
        notes = _ownership.with_record(notes, request.owner_tag, request.vmid)
    except NotesTooLongError as exc:
        raise SpecError('vmid', f'{request.vmid}: {exc}') from None
    if request.guest_type == LXC:
        refusal = _template_plan.template_storage_refusal(_template_plan.volume_storages(config), _storage_types(client), request.name)
        if refusal:
            raise SpecError('vmid', f'{_template_plan.describe(build)} cannot become a template: {refusal}')
    status = client.get(guest_path(build['node'], request.vmid, '/status/current', request.guest_type), context=f'reading the status of {request.vmid}')[
        'status'
    ]
    return Conversion(
        build,
        config,
        status,
        notes,
        _template_plan.template_tags(config.get('tags'), request.owner_tag),
        _template_plan.build_settings(config, request.guest_type),
        _template_plan.seed_drive(config, config.get(_template_plan.name_key(request.guest_type))),
        previous,
        previous_config,
        users,
        _template_plan.name_key(request.guest_type),
        _template_plan.build_addresses(config, request.guest_type),
    )


def execute_conversion(client, request, plan: Conversion) -> tuple[str, list[str]]:
    """Carry the plan out; returns what became of the previous template ('retired' or 'destroyed') and the warnings."""
    build = _execution(client, plan.build, request, plan.status)
    if plan.status != 'stopped':
        build.shutdown(request.shutdown_timeout)
    # No digest: the build VM is this bake's own (tagged puls-building), and its stop may rewrite the config.
    # The tag puls-building stays until the build takes the name (the last write), for the runs waiting on it.
    settings, delete = {'description': plan.notes, **plan.addresses}, list(plan.strip)
    seed = plan.seed
    if seed is not None:
        if seed.cloudinit:
            settings[seed.key] = seed.cloudinit
        else:
            delete.append(seed.key)
    build.configure(set=settings, delete=delete)
    if cloudinit_drive_key(plan.config) or (seed and seed.cloudinit):
        build.regenerate_cloudinit()
    if seed is not None and seed.owned:
        build.remove_volume(seed.volume)
    what = _template_plan.describe(plan.build)
    result = run_conversion(client, request, plan.build)
    warnings = build.outcome.warnings + [f'converting {what} to a template: {line}' for line in result.warnings]
    if plan.previous is None:
        build.configure(set={plan.name_key: request.name, 'tags': plan.tags}, delete=[])
        return 'retired', warnings
    retired = _execution(client, plan.previous, request)
    retired.configure(set={plan.name_key: plan.retired_name(request.name), 'tags': plan.retired_tags}, delete=[])
    build.configure(set={plan.name_key: request.name, 'tags': plan.tags}, delete=[])
    action = 'retired'
    if plan.destroy_previous:
        try:
            retired.destroy(**DESTROY_PARAMS)
            action = 'destroyed'
        except PveApiError as exc:
            # A storage whose volume names hide the base: PVE still knows, and the template stays retired.
            if _BASE_IN_USE not in (exc.reason or ''):
                raise
            retired.outcome.warnings.append(f'{_template_plan.describe(plan.previous)} was kept retired: {exc.reason}')
    return action, warnings + retired.outcome.warnings


def run_conversion(client, request, entry) -> TaskResult:
    """``POST .../template`` of the build, waited for; its TaskResult once the build is a template. qemu-server answers
    the task's UPID. pve-container forks the conversion's worker and answers null (src/PVE/API2/LXC.pm, template): its
    task is then the vztemplate task of the container that the node did not list before the POST, waited for as any
    task. PveApiError when the conversion failed, with what to do on a storage without the template feature, or when
    PVE reported no failure but the build is no template."""
    node, vmid = entry['node'], int(entry['vmid'])
    what = _template_plan.describe(entry)
    context = f'converting {what} to a template'
    path = guest_path(node, vmid, '/template', request.guest_type)

    def converted():
        return as_bool(client.vm_config(node, vmid, guest_type=request.guest_type).get('template'))

    earlier = task_upids(client, node, vmid, CONVERSION_TASK) if request.guest_type == LXC else set()
    try:
        result = client.run_task('POST', path, context=context, task_timeout=request.timeout)
        if result.upid is None:
            result = wait_forked_task(client, node, vmid, CONVERSION_TASK, earlier, request.timeout, context, converted)
    except PveApiError as exc:
        if _NO_TEMPLATE_FEATURE not in (exc.reason or ''):
            raise
        raise PveApiError(
            f'{exc}\n{what} stays a normal guest: one of its volumes is on a storage that cannot hold a template (thick LVM '
            'has no template feature, pve-storage LVMPlugin.pm); build it on a storage that can (LVM-thin, ZFS, Ceph RBD, '
            'a directory)',
            reason=exc.reason,
            upid=exc.upid,
            exitstatus=exc.exitstatus,
            log=exc.log,
        ) from None
    if not converted():
        raise PveApiError(f'{context}: PVE reported no failure, but {what} is not a template afterwards; see its tasks in PVE', reason='not converted')
    return result
