# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_iso's run: check the declared file against the cluster, read what each node has, plan, then act.

Everything that can be refused is refused before the first write: the options (``declare``), the
nodes, the storage (exists, enabled on each node, holds files of the content type). Then each node
acted on is read (its volumes, its notes' record), ``_iso_plan.plan`` decides, and a real run executes
the plan: deletes first, then the downloads on all nodes at once (PVE runs them in parallel), the
uploads, and finally the record of each node that succeeded. Every task shares one deadline.

A shared storage holds one copy for all nodes: it is acted on, and recorded, through the first node.
"""

from __future__ import annotations

import time

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.puls.proxmox.plugins.module_utils import _cidata, _iso_plan
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._files_record import read_notes, update_record
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import iso_needs, require
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import (
    delete_volume,
    list_volumes,
    start_download,
    upload_volume,
    wait_download,
)

# Storage types whose volumes are files (PVE's path-based plugins): only these hold iso, vztmpl and import.
FILE_STORAGE_TYPES = ('dir', 'nfs', 'cifs', 'cephfs', 'glusterfs', 'btrfs')
# The reason of _tasks.wait_task's error when a task outlived its timeout.
TASK_TIMEOUT = 'task timeout'


def declare(params):
    """The IsoSpec of the module's params, with the src file read; IsoOptionError for any option at fault."""
    if params.get('seed') is not None:
        for present, library in ((_cidata.HAS_YAML, 'PyYAML'), (_cidata.HAS_PYCDLIB, 'pycdlib')):
            if not present:
                raise _iso_plan.IsoOptionError('seed', missing_required_lib(library))
    spec = _iso_plan.check_options(params)
    if spec.src is None:
        return spec
    try:
        with open(spec.src, 'rb') as handle:
            data = handle.read()
    except OSError as exc:
        raise _iso_plan.IsoOptionError('src', 'cannot read %s: %s (src is a path on the host the module runs on)' % (spec.src, exc.strerror or exc)) from None
    return _iso_plan.source_from_file(spec, data)


def reconcile(client, spec, check_mode=False):
    """Converge the declared file; returns the module result (changed, diff, volid, action, reason, ...)."""
    deadline = time.monotonic() + spec.timeout
    _check_nodes(client, spec)
    shared = _check_storage(client, spec)
    targets = spec.nodes[:1] if shared else spec.nodes
    observed = [_observe(client, spec, node) for node in targets]
    plan = _iso_plan.plan(spec, observed)
    require(client, iso_needs(plan.steps, spec.storage, spec.source is not None and spec.source.kind == _iso_plan.URL), f'the plan for {plan.volid}')
    if plan.changed and not check_mode:
        _apply(client, spec, plan, deadline)
    result = {
        'changed': plan.changed,
        'diff': {'before': plan.before, 'after': plan.after},
        'volid': plan.volid,
        'action': {step.node: step.action for step in plan.steps},
        'reason': {step.node: step.reason for step in plan.steps},
    }
    if spec.source is not None:
        result['record'] = spec.source.record
        if spec.source.seed is not None:
            result['instance_id'] = spec.source.seed.instance_id
    return result


def _check_nodes(client, spec):
    nodes = {item.get('node'): item for item in client.get('/nodes', context='listing the nodes of the cluster') or ()}
    for node in spec.nodes:
        if node not in nodes:
            raise PveApiError('%s: %r is not a node of this cluster; its nodes are %s' % (spec.nodes_option, node, ', '.join(sorted(nodes))))
        if nodes[node].get('status') not in (None, 'online'):
            raise PveApiError('%s: node %s is %s; bring it online or leave it out' % (spec.nodes_option, node, nodes[node].get('status')))


def _check_storage(client, spec):
    """Refuse a storage that cannot hold the file on some node; returns whether it is shared."""
    shared = False
    for index, node in enumerate(spec.nodes):
        item = _storage_status(client, spec.storage, node)
        if index == 0:
            shared = bool(item.get('shared'))
        if not item.get('enabled', 1) or not item.get('active', 1):
            raise PveApiError(
                "storage: %s is not %s on node %s; enable it there (pvesm set %s --nodes ...) or choose another storage"
                % (spec.storage, 'active' if item.get('enabled', 1) else 'enabled', node, spec.storage)
            )
        contents = [name for name in str(item.get('content') or '').split(',') if name]
        if spec.state == 'present' and spec.content not in contents:
            raise PveApiError(_content_missing(spec, item.get('type'), contents))
    return shared


def _storage_status(client, storage, node):
    try:
        items = client.get('/nodes/%s/storage' % node, storage=storage, context='reading storage %s on node %s' % (storage, node))
    except PveApiError as exc:
        if exc.status == 400 and 'storage' in exc.errors:
            raise PveApiError(
                'storage: %r does not exist in this cluster; name one that does (pvesm status lists them)' % storage, status=exc.status, errors=exc.errors
            ) from None
        raise
    if not items:
        raise PveApiError('storage: %s is not visible to the API user on node %s; it needs Datastore.Audit on /storage/%s' % (storage, node, storage))
    return items[0]


def _content_missing(spec, storage_type, contents):
    if storage_type not in FILE_STORAGE_TYPES:
        return 'storage: %s is a %s storage, which cannot hold %s files; choose a file-based storage (%s), such as local' % (
            spec.storage,
            storage_type,
            spec.content,
            ', '.join(FILE_STORAGE_TYPES),
        )
    return "storage: %s is not configured for content %s (it holds %s); enable it with: pvesm set %s --content %s" % (
        spec.storage,
        spec.content,
        ', '.join(contents) or 'nothing',
        spec.storage,
        ','.join(contents + [spec.content]),
    )


def _observe(client, spec, node):
    present = spec.volid in list_volumes(client, node, spec.storage, spec.content)
    return _iso_plan.Observed(node, present, read_notes(client, node).entries.get(spec.volid))


def _apply(client, spec, plan, deadline):
    """Execute plan: every node is attempted; the first failure is raised after the others were recorded."""
    source = spec.source
    acting = [step for step in plan.steps if step.action != _iso_plan.NONE]
    failures = {}

    def attempt(node, work):
        """work()'s result, or None once node has failed (its first failure is kept)."""
        try:
            return work()
        except PveApiError as exc:
            if exc.reason == TASK_TIMEOUT:
                exc = PveApiError('timeout: the %d s of the timeout option were up: %s' % (spec.timeout, exc), reason=exc.reason, upid=exc.upid)
            failures.setdefault(node, exc)
            return None

    # PVE's download-url does not replace a file: the old one goes first (an upload replaces it itself).
    for step in acting:
        if step.action == _iso_plan.DELETE or (step.action == _iso_plan.REPLACE and source.kind == _iso_plan.URL):
            attempt(step.node, lambda node=step.node: delete_volume(client, node, spec.volid, _remaining(deadline)))
    transfers = [step for step in acting if step.action != _iso_plan.DELETE and step.node not in failures]
    if source is not None and source.kind == _iso_plan.URL:
        # Started on every node before waiting for any: each node downloads on its own.
        checksum = (source.checksum.algorithm, source.checksum.digest) if source.checksum else None
        started = [
            (
                step.node,
                attempt(
                    step.node,
                    lambda node=step.node: start_download(client, node, spec.storage, spec.filename, source.url, spec.content, checksum, source.compression),
                ),
            )
            for step in transfers
        ]
        for node, upid in started:
            if upid:
                attempt(
                    node,
                    lambda node=node, upid=upid: wait_download(client, upid, node, spec.storage, spec.filename, source.url, spec.content, _remaining(deadline)),
                )
    elif transfers:
        data = _payload(source)
        for step in transfers:
            attempt(step.node, lambda node=step.node: upload_volume(client, node, spec.storage, spec.filename, data, spec.content, _remaining(deadline)))
    record = source.record if spec.state == 'present' else None
    for step in acting:
        if step.node not in failures:
            attempt(step.node, lambda node=step.node: update_record(client, node, {spec.volid: record}))
    if failures:
        first = next(iter(failures.values()))
        if len(failures) == 1:
            raise first
        message = '\n'.join('on %s: %s' % (node, exc) for node, exc in failures.items())
        raise PveApiError(
            '%s failed on nodes %s:\n%s' % (spec.volid, ', '.join(failures), message),
            reason=first.reason,
            status=first.status,
            errors=first.errors,
            upid=first.upid,
            exitstatus=first.exitstatus,
            log=first.log,
        )


def _payload(source):
    """The bytes to upload: the src file as read and hashed, or the seed built into an ISO."""
    if source.kind == _iso_plan.SEED:
        return _cidata.build_seed_iso(source.seed).data
    return source.data


def _remaining(deadline):
    return max(deadline - time.monotonic(), 0)
