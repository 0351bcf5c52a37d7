# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A VM's declared extra disks (``disks``) and network devices (``nets``): what PVE has of them, the value that
allocates a new disk, and the view the diff shows (only the declared properties). ``_vm_config`` checks the options
into these (``parse_disks``, ``parse_nets``); ``_vm_plan`` writes them over the current values, every undeclared
property kept (a disk's volume and size, a NIC's MAC).

Pure: values in, values out.

Decisions:
- ``disks`` and ``nets`` name their device by its config key (``scsi1``, ``net1``); the boot disk and ``net0`` keep
  their own options (``disk_size``, ``bridge``, ``vlan``), so ``net0`` is allowed in ``nets`` only when those two are
  not declared (``VmSpec``), and a disk entry naming the boot disk is refused (the planner).
- A disk's ``size`` is absolute and grows only, as ``disk_size``; a new disk is allocated as ``STORAGE:GIB``
  (qemu-server ``PVE/API2/Qemu.pm``, ``create_disks``: a size in GiB allocates a new volume).
- Property values are written in PVE's form: flags ``1``/``0`` except ``discard`` (``on``/``ignore``), as qemu-server
  ``PVE/QemuServer/Drive.pm`` declares them. What a bus has not (``ssd`` on VirtIO, ``iothread`` on IDE or SATA) is
  refused here, as PVE's schema refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# qemu-server PVE/QemuServer/Drive.pm: $MAX_IDE_DISKS 4, $MAX_SATA_DISKS 6, $MAX_SCSI_DISKS 31, $MAX_VIRTIO_DISKS 16.
DISK_SLOTS = {'scsi': 31, 'virtio': 16, 'sata': 6, 'ide': 4}
# qemu-server PVE/QemuServer.pm: $MAX_NETS.
MAX_NETS = 32
CACHE_MODES = ('none', 'writethrough', 'writeback', 'unsafe', 'directsync')
# Drive.pm's formats: ssd is in the ide, sata and scsi formats, iothread in the scsi and virtio ones.
BUSES_OF = {'ssd': ('ide', 'sata', 'scsi'), 'iothread': ('scsi', 'virtio')}
DISK_FLAGS = ('discard', 'ssd', 'iothread', 'backup')
DISK_KEYS = ('slot', 'size', 'storage', 'cache', *DISK_FLAGS)  # an entry's keys, as the errors list them
NET_KEYS = ('slot', 'bridge', 'vlan', 'model', 'firewall', 'mtu')
EFIDISK_KEYS = ('storage', 'pre_enrolled_keys')
TPM_KEYS = ('storage', 'version')
# qemu-server PVE/QemuServer/Drive.pm: tpmstate0's versions; v2.0 is what a current guest (Windows 11) needs.
TPM_VERSIONS = ('v2.0', 'v1.2')
# qemu-server PVE/QemuServer.pm $vga_fmt: the display types.
VGA_TYPES = ('std', 'cirrus', 'qxl', 'qxl2', 'qxl3', 'qxl4', 'none', 'serial0', 'serial1', 'serial2', 'serial3', 'virtio', 'virtio-gl', 'vmware')
SLOT = re.compile(r'^([a-z]+)(\d+)$')
_GIB = 1024**3


@dataclass(frozen=True)
class DiskSpec:
    """One declared disk: its slot, its size in bytes, the storage a new one goes to, and its declared drive properties
    in PVE's form (``cache``, ``discard``, ``ssd``, ``iothread``, ``backup``)."""

    slot: str
    size: int
    storage: str | None
    properties: tuple[tuple[str, str], ...]
    index: int = 0  # its place in the option's list, for the errors (``disks[1].size``)

    def option(self, key: str) -> str:
        return f'disks[{self.index}].{key}'


@dataclass(frozen=True)
class NicSpec:
    """One declared network device: its slot and its declared properties in PVE's names (``bridge``, ``tag``,
    ``model``, ``firewall``, ``mtu``)."""

    slot: str
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FirmwareDrive:
    """A declared EFI disk (``efidisk0``) or TPM state (``tpmstate0``): the storage a new one goes to, and the properties it
    is created with in PVE's names (``efitype``, ``pre-enrolled-keys``; ``version``)."""

    key: str
    option: str
    storage: str | None
    properties: tuple[tuple[str, str], ...]

    def new_value(self, storage: str) -> str:
        """The value that makes PVE create it (qemu-server PVE/API2/Qemu.pm create_disks: its size is PVE's own)."""
        return ','.join([f'{storage}:1'] + [f'{key}={value}' for key, value in self.properties])

    def view(self, volume: str | None, properties: Mapping[str, str]) -> dict[str, Any]:
        """What the diff shows of it: its storage and the declared properties."""
        return {'storage': volume.partition(':')[0] if volume and ':' in volume else None, **{key: properties.get(key) for key, _value in self.properties}}


def allocation(storage: str, size: int) -> str:
    """The volume part that makes PVE allocate ``size`` bytes on ``storage``: ``STORAGE:GIB``."""
    return f"{storage}:{f'{size / _GIB:.6f}'.rstrip('0').rstrip('.')}"


def new_disk_value(disk: DiskSpec, storage: str) -> str:
    """The value that makes PVE allocate the declared disk on ``storage``: ``STORAGE:GIB`` and its properties."""
    return ','.join([allocation(storage, disk.size)] + [f'{key}={value}' for key, value in disk.properties])


def disk_view(disk: DiskSpec, volume: str | None, properties: Mapping[str, str], size: str | None) -> dict[str, Any]:
    """What the diff shows of a disk: its storage, size and the declared properties (PVE's value, None when unset)."""
    view: dict[str, Any] = {'storage': volume.partition(':')[0] if volume and ':' in volume else None, 'size': size}
    view.update({key: properties.get(key) for key, _value in disk.properties})
    return view


def nic_view(nic: NicSpec, properties: Mapping[str, str] | None) -> dict[str, Any] | None:
    """What the diff shows of a network device: its declared properties (PVE's value, None when unset); None when absent."""
    if properties is None:
        return None
    return {key: properties.get(key) for key, _value in nic.properties}
