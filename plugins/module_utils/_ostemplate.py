# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_os_template's pure core: an OS template named as PVE's appliance index names it, resolved to a volume.

PVE's appliance files are named PACKAGE_VERSION_ARCH.tar.EXT (pve-manager PVE/APLInfo.pm, read_aplinfo_from_fh: the
index entry's `template` is the file name of its `location`, its `package` the name before the version), for example
debian-12-standard_12.7-1_amd64.tar.zst of the package debian-12-standard. A name is the package, such as
debian-12-standard or ubuntu-24.04-standard, or the whole file name. It resolves to the newest matching vztmpl volume
on the node's storages; else to the newest matching entry of the node's appliance index, to download
(POST /nodes/{node}/aplinfo, pve-manager PVE/API2/Nodes.pm apl_download) onto the first storage of the node that holds
vztmpl content."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# PACKAGE_VERSION_ARCH.tar[.EXT] (VZTMPL_EXT_RE_1 of pve-storage PVE/Storage.pm for the extensions).
APPLIANCE_FILE = re.compile(r'^(?P<package>[^_/]+)_(?P<version>[^_/]+)_(?P<arch>[^_/]+)\.tar(?:\.(?:gz|xz|zst|bz2))?$')
# A name that can be an OS template's: no volume (STORAGE:...), no path, no VMID.
_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+_-]*$')


class OsTemplateError(Exception):
    """An OS template that cannot be had, with the option at fault first."""

    def __init__(self, option: str, problem: str):
        super().__init__(f'{option} {problem}')
        self.option = option


@dataclass(frozen=True)
class Resolution:
    """Where the OS template is: its volume, and the download that brings it there (None when it is there already)."""

    volume: str
    download: Mapping[str, str] | None = None


def is_os_template_name(name: str) -> bool:
    """Whether ``name`` can name an OS template (not a volume STORAGE:vztmpl/FILE, not a VMID)."""
    return bool(_NAME.match(name)) and not name.isdigit()


def matches(name: str, filename: str) -> bool:
    """Whether the appliance file ``filename`` is the one ``name`` names: the file itself, or its package's."""
    found = APPLIANCE_FILE.match(filename)
    return filename == name or (found is not None and found.group('package') == name)


def version_key(filename: str) -> tuple:
    """The order of the versions of one package, newest last: the version's numbers compared as numbers (12.10-1
    after 12.7-1), its other parts as text."""
    found = APPLIANCE_FILE.match(filename)
    version = found.group('version') if found else ''
    return tuple((0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.findall(r'\d+|[^\d.+~:-]+', version))


def newest(name: str, filenames: Iterable[str]) -> str | None:
    """The newest of ``filenames`` that ``name`` names, or None."""
    found = sorted((filename for filename in filenames if matches(name, filename)), key=lambda filename: (version_key(filename), filename))
    return found[-1] if found else None


def resolve(name: str, node: str, volumes: Mapping[str, str], appliances: Iterable[Mapping[str, Any]], storages: Iterable[str]) -> Resolution:
    """The volume of ``name`` on ``node``: the newest of its ``volumes`` ({volid: file name}, the vztmpl volumes of the
    node's storages) that it names; else the newest entry of its appliance index (``appliances``, GET
    /nodes/{node}/aplinfo) to download onto the first of ``storages`` (those of the node that hold vztmpl)."""
    if not is_os_template_name(name):
        raise OsTemplateError('name', f'must be an OS template as PVE names it, such as debian-12-standard or its file name, got {name!r}')
    on_storage = newest(name, volumes.values())
    if on_storage is not None:
        return Resolution(sorted(volid for volid, filename in volumes.items() if filename == on_storage)[0])
    index = {entry['template']: entry for entry in appliances if entry.get('template') and entry.get('type') in ('lxc', 'openvz')}
    template = newest(name, index)
    if template is None:
        # An empty index: the node never fetched it (pveam update; PVE/APLInfo.pm load_data reads what it stored).
        fix = (
            'its index is empty: run `pveam update` on the node, or give the volume of an OS template'
            if not index
            else 'give the package or file name of one that `pveam available` lists, or download it first'
        )
        raise OsTemplateError('name', f'{name!r} is no OS template on the storages of node {node} nor in its appliance index; {fix}')
    candidates = list(storages)
    if not candidates:
        raise OsTemplateError('name', f'{name!r} is to be downloaded, but node {node} has no active storage for OS templates (content vztmpl)')
    storage = candidates[0]
    return Resolution(f'{storage}:vztmpl/{template}', {'storage': storage, 'template': template})
