# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files on a node's storage, through PveClient: list, download (PVE fetches a URL), upload, delete.

Every write waits for its PVE task. Shared by pve_iso and pve_vm (its user_data seed ISO).
Volume ids are ``STORAGE:CONTENT/FILENAME`` for the file content types (iso, vztmpl, import).
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TASK_TIMEOUT
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_missing

# PVE::Tools::download_file_from_url (pve-common), when a file does not have the declared checksum: the downloaded
# one (PVE removes its temporary file), or, ending in ", aborting", a file already at the name (PVE keeps it).
_CHECKSUM_MISMATCH = re.compile(r"checksum mismatch: got '(?P<got>[0-9a-fA-F]+)' != expect '(?P<expected>[0-9a-fA-F]+)'(?P<aborting>, aborting)?")


def file_volid(storage, content, filename):
    return '%s:%s/%s' % (storage, content, filename)


def list_volumes(client, node, storage, content=None):
    """The volumes on node's storage (of one content type, or all): {volid: PVE's entry (size, format, ctime, ...)}."""
    items = client.get(
        '/nodes/%s/storage/%s/content' % (node, storage),
        content=content,
        context='listing the %s on storage %s of node %s' % (content or 'volumes', storage, node),
    )
    return {item['volid']: item for item in items or ()}


def volume_size(client, node, volid):
    """The size in bytes of volume volid as its storage has it (pve-storage src/PVE/API2/Storage/Content.pm, info:
    volume_size_info), which a guest's config may not say exactly."""
    storage = volid.partition(':')[0]
    info = client.get('/nodes/%s/storage/%s/content/%s' % (node, storage, volid), context='reading the size of volume %s on node %s' % (volid, node))
    return int(info['size'])


def start_download(client, node, storage, filename, url, content, checksum=None, compression=None):
    """Start PVE's download-url on node and return the task's UPID (see wait_download).

    checksum is (algorithm, hex digest) or None; compression (gz, lzo, zst, bz2) is for ISOs only.
    """
    params = {"url": url, "content": content, "filename": filename, "compression": compression}
    if checksum:
        params.update(checksum=checksum[1], **{'checksum-algorithm': checksum[0]})
    return client.post('/nodes/%s/storage/%s/download-url' % (node, storage), context=_download_context(node, storage, filename, url), **params)


def wait_download(client, upid, node, storage, filename, url, content, task_timeout=DEFAULT_TASK_TIMEOUT):
    """Wait for a download task and return the volid.

    A checksum mismatch fails with both checksums and deletes nothing: PVE has removed the file it downloaded,
    and a file under the name (the ", aborting" variant: it was there before the download began) was made by
    someone else, another run perhaps, and is theirs.
    """
    volid = file_volid(storage, content, filename)
    context = _download_context(node, storage, filename, url)
    try:
        client.wait_task(upid, task_timeout, context)
    except PveApiError as exc:
        mismatch = _CHECKSUM_MISMATCH.search(exc.exitstatus or '')
        if mismatch and mismatch.group('aborting'):
            message = (
                '%s failed: %s appeared on the storage while this run was at work (another run or a person put it there), '
                'and its checksum %s is not the declared %s; nothing was downloaded and that file was left alone. '
                'Find out who stores %s, then delete it or declare its source' % (context, volid, mismatch.group('got'), mismatch.group('expected'), volid)
            )
        elif mismatch:
            message = (
                '%s failed: checksum mismatch: the file at the URL has checksum %s, the declared checksum is %s; '
                'this run stored nothing. Check the checksum option against the URL' % (context, mismatch.group('got'), mismatch.group('expected'))
            )
        else:
            raise
        raise PveApiError(message, reason=exc.reason, upid=exc.upid, exitstatus=exc.exitstatus, log=exc.log) from None
    return volid


def download_volume(client, node, storage, filename, url, content, checksum=None, compression=None, task_timeout=DEFAULT_TASK_TIMEOUT):
    """Have node download url to its storage as filename (checked by PVE against checksum) and wait; returns the volid."""
    upid = start_download(client, node, storage, filename, url, content, checksum, compression)
    return wait_download(client, upid, node, storage, filename, url, content, task_timeout)


def upload_volume(client, node, storage, filename, data, content, task_timeout=DEFAULT_TASK_TIMEOUT):
    """Upload data (bytes) to node's storage as filename (multipart) and wait; returns the volid.

    PVE checks the SHA-256 sent along in its task; the stored size is checked after it. An existing
    file of that name is replaced.
    """
    volid = file_volid(storage, content, filename)
    context = 'uploading %s (%d bytes) to storage %s of node %s' % (filename, len(data), storage, node)
    upid = client.upload(
        '/nodes/%s/storage/%s/upload' % (node, storage),
        filename=filename,
        data=data,
        content=content,
        checksum=('sha256', hashlib.sha256(data).hexdigest()),
        context=context,
    )
    if upid:
        client.wait_task(upid, task_timeout, context)
    stored = list_volumes(client, node, storage, content).get(volid)
    if stored is None:
        raise PveApiError('%s: the upload finished, but %s is not on the storage' % (context, volid))
    if stored.get('size') is not None and int(stored['size']) != len(data):
        raise PveApiError('%s: %s holds %s bytes after the upload, not %d; upload it again' % (context, volid, stored['size'], len(data)))
    return volid


def delete_volume(client, node, volid, task_timeout=DEFAULT_TASK_TIMEOUT):
    """Delete volid from node's storage and wait. A volume that is not there is not an error."""
    storage = volid.split(':', 1)[0]
    context = 'deleting %s on node %s' % (volid, node)
    try:
        upid = client.delete('/nodes/%s/storage/%s/content/%s' % (node, storage, volid), context=context, idempotent=True)
        if upid:
            client.wait_task(upid, task_timeout, context)
    except PveApiError as exc:
        if not is_missing(exc.reason):
            raise


def _download_context(node, storage, filename, url):
    return 'downloading %s to storage %s of node %s as %s' % (url, storage, node, filename)
