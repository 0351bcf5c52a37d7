# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The raw multipart bodies the lab received, read again with PVE's own rules (pve-http-server
PVE/APIServer/AnyEvent.pm, file_upload_multipart, as tests/lab/pve/transfer.py models it)."""

from __future__ import annotations

import hashlib

from lab.pve.transfer import parse_upload


def uploads_by_filename(lab):
    """{filename: (fields, data)} of every upload body the lab kept, each parsed with PVE's multipart rules
    (an out-of-order body raises lab.pve.transfer.UploadRefused here)."""
    bodies = lab.call(lambda: list(lab.pve.upload_bodies))
    parsed = [parse_upload(content_type, body) for content_type, body in bodies]
    return {fields['filename']: (fields, data) for fields, data in parsed}


def assert_pve_ordered_upload(lab, volid):
    """The upload that made volid parses with PVE's rules, its fields in PVE's order, its checksum its bytes'."""
    storage_content, _slash, filename = volid.rpartition('/')
    content = storage_content.split(':', 1)[1]
    fields, data = uploads_by_filename(lab)[filename]
    assert list(fields) == ['content', 'checksum-algorithm', 'checksum', 'filename'], fields
    assert fields == {'content': content, 'checksum-algorithm': 'sha256', 'checksum': hashlib.sha256(data).hexdigest(), 'filename': filename}
    assert data == lab.volume_bytes(volid)
