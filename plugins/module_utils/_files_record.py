# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of which declared source each managed file came from, kept in a node's notes.

PVE has no notes for ISOs or import images (only backups have volume notes), so pve_iso keeps one
managed line in the node's notes (``description`` of ``/nodes/{node}/config``)::

    [puls-files: local:iso/noble.iso=3f2a9c1b7d4e,local:import/debian.qcow2=0c1d2e3f4a5b]

keyed by volid, valued by the short hash of the declared source (``_iso_plan.Source.record``). The line
is parsed and rendered by ``_notes`` with its own tag; every other character of the notes is kept.
A write carries the digest of the read it is based on; when someone changed the node's config in
between, PVE refuses it and the update is re-read and merged again (a few times).

An empty config file (a fresh node's, or one whose last notes were deleted) reads back as ``{}`` without a digest,
and PVE then checks no digest on a write (pve-manager PVE/NodeConfig.pm ``load_config``, pve-common PVE/Tools.pm
``assert_if_modified``): two writers reading it could each replace the other's notes. So a writer that reads no
digest first gives the file one option, ``startall-onboot-delay: 0`` (PVE's default: no delay, nothing changes),
written alone so that it replaces nothing, and then reads, decides and writes with the digest as always; a write
that deletes the notes of a file with no other option keeps that option, so the file does not become empty again.

Reading needs Sys.Audit on /, writing Sys.Modify on / (pve-manager PVE/API2/NodeConfig.pm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.puls.proxmox.plugins.module_utils import _notes
from ansible_collections.puls.proxmox.plugins.module_utils._errors import DIGEST_WRITE_ATTEMPTS, PveApiError, is_concurrent_change

FILES_TAG = 'puls-files'
# PVE::NodeConfig: the node's description holds at most 64 KiB.
MAX_NODE_NOTES_LENGTH = 64 * 1024
# A node option at PVE's default (pve-manager PVE/NodeConfig.pm $confdesc, since 6.1): it keeps the file non-empty.
ANCHOR = {'startall-onboot-delay': 0}


@dataclass(frozen=True)
class NodeNotes:
    """A node's notes as read: the text, the record's entries {volid: hash}, the config digest to write with (None:
    the file is empty), and whether the config holds an option besides the notes (which keeps the file non-empty)."""

    description: str
    entries: dict
    digest: str | None
    other_options: bool = False


def parse_record(description: str | None) -> dict:
    """The record's entries {volid: hash} in the notes, in their order (empty without a record)."""
    return _notes.parse(description, tag=FILES_TAG).entries


def render_record(description: str | None, entries: Mapping[str, str]) -> str:
    """The notes with the record holding entries (without the line when there are none), the rest untouched."""
    return _notes.render(description, entries, tag=FILES_TAG, max_length=MAX_NODE_NOTES_LENGTH)


def merge(entries: Mapping[str, str], changes: Mapping[str, str | None]) -> dict:
    """entries with changes applied: a volid set to a hash (a new one appended), or dropped when None."""
    merged = dict(entries)
    for volid, record in changes.items():
        if record is None:
            merged.pop(volid, None)
        else:
            merged[volid] = record
    return merged


def read_notes(client, node: str) -> NodeNotes:
    """Node's notes and record. The whole config is read: asked for one property, PVE sends no digest."""
    config = client.get('/nodes/%s/config' % node, context='reading the notes of node %s' % node) or {}
    description = config.get('description') or ''
    return NodeNotes(description, parse_record(description), config.get('digest'), bool(set(config) - {'description', 'digest'}))


def update_record(client, node: str, changes: Mapping[str, str | None]) -> bool:
    """Apply changes ({volid: hash or None}) to node's record; True when the notes were written.

    Written with the digest of the read; on PVE's "detected modified configuration" the notes are
    read again and the changes merged into what is there now.
    """
    doing = 'recording the source of %s in the notes of node %s' % (', '.join(changes), node)

    def changed(notes: NodeNotes) -> str | None:
        entries = merge(notes.entries, changes)
        if entries == notes.entries:
            return None
        try:
            return render_record(notes.description, entries)
        except _notes.NotesTooLongError as exc:
            raise PveApiError('%s failed: %s' % (doing, exc)) from None

    return update_notes(client, node, changed, doing)


def update_notes(client, node: str, change, doing: str, attempts: int = DIGEST_WRITE_ATTEMPTS, pause=None) -> bool:
    """Write change(notes) (a NodeNotes read now; None: nothing to write) as node's notes; True when written.

    The write carries the digest of the read; when PVE refuses it as a concurrent change, the notes
    are read again and change is asked again, at most attempts times (pause(attempt) called between).
    A read without a digest (an empty config file) is never written on: the file gets ANCHOR first, and the
    notes are read and change asked again.
    """
    path = '/nodes/%s/config' % node
    attempt = 0
    while True:
        attempt += 1
        notes = read_notes(client, node)
        description = change(notes)
        if description is None:
            return False
        if notes.digest is None:
            if attempt >= attempts:
                raise PveApiError(
                    '%s failed: the config of node %s still read back without a digest after %d writes of startall-onboot-delay, '
                    'so its notes cannot be written without the risk of replacing another writer\'s; check that /etc/pve/nodes/%s/config '
                    'is writable and keeps what is written to it' % (doing, node, attempt - 1, node)
                )
            # Alone, so that it replaces nothing another writer put there meanwhile; repeating it changes nothing.
            client.put(path, context='%s: giving the empty config of node %s a digest' % (doing, node), idempotent=True, **ANCHOR)
            continue
        params = {'description': description} if description else {'delete': 'description', **({} if notes.other_options else ANCHOR)}
        try:
            # Repeating it is harmless: a write that did land makes the digest stale, and the re-read finds it done.
            client.put(path, context=doing, idempotent=True, digest=notes.digest, **params)
            return True
        except PveApiError as exc:
            if not is_concurrent_change(exc.reason) or attempt >= attempts:
                raise
        if pause is not None:
            pause(attempt)
