# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a new VM's disk comes from: pve_vm's ``image`` resolved against ``GET /cluster/resources?type=vm``.

Pure: the caller lists the resources, this decides. In order, ``image`` is
- a URL: refused (download it to a storage first, with pve_iso);
- a volume ID (it has a ``:``; a VM name cannot): imported, if PVE can import from it:
  ``STORAGE:import/NAME.qcow2|raw|vmdk`` (content type ``import``) or ``STORAGE:VMID/DISK`` (``images``);
- a VMID: that VM or template is cloned;
- the exact name of one template;
- else a case-insensitive substring of exactly one template's name.
Several matches are an error listing the candidates, never a coin toss: PVE does not keep VM names unique (qemu-server ``PVE/API2/Qemu.pm``,
``create_vm`` checks only the VMID).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError

CLONE = 'clone'
IMPORT = 'import'

_URL = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*://')
# qemu-server PVE/API2/Qemu.pm, $check_storage_access: import-from takes volumes of content "import" (a disk image file) or "images".
_IMPORTABLE = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]:(?:import/[^/]+\.(?:qcow2|raw|vmdk)|\d+/[^/]+)$')


@dataclass(frozen=True)
class ImageSource:
    """A resolved image: a VM or template to clone (``vmid``, ``node``, ``name``, ``template``) or a ``volume`` to import."""

    kind: str
    vmid: int | None = None
    node: str | None = None
    name: str | None = None
    template: bool = False
    volume: str | None = None

    def describe(self) -> str:
        """How the diff and messages name the source."""
        if self.kind == IMPORT:
            return f'import of {self.volume}'
        return f"{'template' if self.template else 'VM'} {self.name or '(unnamed)'} ({self.vmid} on {self.node})"


def _source(entry: Mapping[str, Any]) -> ImageSource:
    return ImageSource(CLONE, vmid=int(entry['vmid']), node=entry.get('node'), name=entry.get('name'), template=bool(int(entry.get('template') or 0)))


def _listing(entries: Iterable[Mapping[str, Any]]) -> str:
    return ', '.join(_source(entry).describe() for entry in sorted(entries, key=lambda entry: int(entry['vmid'])))


def resolve_image(image: Any, resources: Iterable[Mapping[str, Any]], linked_clone: bool = False) -> ImageSource:
    """Resolve ``image`` (see the module docstring) against the cluster's VM resources; SpecError when it cannot be."""
    text = str(image).strip() if image is not None else ''
    if not text:
        raise SpecError('image', 'is required to create the VM: give a template name or VMID, or a volume to import (e.g. local:import/noble.qcow2)')
    if _URL.match(text):
        raise SpecError(
            'image', f'{text!r} is a URL; download it to a storage first (pve_iso, content import) and declare the volume, e.g. local:import/noble.qcow2'
        )
    if ':' in text:
        if not _IMPORTABLE.match(text):
            raise SpecError(
                'image',
                f'{text!r} is not a volume PVE can import a disk from; use STORAGE:import/NAME.qcow2 '
                '(.raw, .vmdk; content type import, an iso-content .img is refused) or STORAGE:VMID/DISK',
            )
        if linked_clone:
            raise SpecError('linked_clone', f'needs a template to clone, but image {text!r} is a volume to import; set linked_clone: false')
        return ImageSource(IMPORT, volume=text)
    guests = [entry for entry in resources if entry.get('type', 'qemu') == 'qemu']
    if text.isdigit():
        found = [entry for entry in guests if int(entry['vmid']) == int(text)]
        if not found:
            raise SpecError('image', f'{text} is not the VMID of any VM or template in the cluster')
        source = _source(found[0])
    else:
        source = _source(_template_named(text, [entry for entry in guests if int(entry.get('template') or 0)]))
    if linked_clone and not source.template:
        raise SpecError('linked_clone', f'needs a template, but image {text!r} is {source.describe()}; convert it to a template or set linked_clone: false')
    return source


def _template_named(text: str, templates: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    exact = [entry for entry in templates if entry.get('name') == text]
    matches = exact or [entry for entry in templates if text.lower() in (entry.get('name') or '').lower()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SpecError('image', f'{text!r} matches no template name (nor is it a VMID or a volume); check the name, or give the VMID')
    kind = 'templates named' if exact else 'templates whose names contain'
    raise SpecError('image', f'{text!r} is ambiguous: {len(matches)} {kind} it: {_listing(matches)}; give a longer part of the name or the VMID')
