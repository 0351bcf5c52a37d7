# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API path of a guest of either type: one spelling for VMs (``qemu``) and containers (``lxc``).

PVE serves a node's VMs under ``/nodes/{node}/qemu`` and its containers under ``/nodes/{node}/lxc`` (pve-manager
``PVE/API2/Nodes.pm`` registers qemu-server's ``PVE::API2::Qemu`` and pve-container's ``PVE::API2::LXC`` at those
paths); ``/cluster/resources`` tells which type a guest is (its ``type``).
"""

from __future__ import annotations

QEMU = 'qemu'
LXC = 'lxc'
GUEST_TYPES = (QEMU, LXC)
# Seconds a graceful shutdown of a guest of either type may take before it is stopped (its modules' shutdown_timeout).
DEFAULT_SHUTDOWN_TIMEOUT = 180
# What messages call a guest of each type, and the prefix of its HA resource id (pve-ha-manager
# src/PVE/HA/Config.pm, parse_sid: vm:VMID for qemu, ct:VMID for lxc).
_NOUNS = {QEMU: 'VM', LXC: 'container'}
_HA_PREFIXES = {QEMU: 'vm', LXC: 'ct'}


def guests_path(node: str, guest_type: str = QEMU) -> str:
    """The collection of the node's guests of ``guest_type`` (a create is a POST to it)."""
    if guest_type not in GUEST_TYPES:
        raise ValueError(f'guest type {guest_type!r} is not one of {", ".join(GUEST_TYPES)}')
    return f'/nodes/{node}/{guest_type}'


def noun(guest_type: str = QEMU) -> str:
    """What a message calls a guest of ``guest_type``: ``VM`` or ``container``."""
    return _NOUNS[guest_type]


def ha_resource(vmid: int | str, guest_type: str = QEMU) -> str:
    """The guest's HA resource id, as ha-manager and the web UI name it (``vm:100``, ``ct:200``)."""
    return f'{_HA_PREFIXES[guest_type]}:{vmid}'


def guest_path(node: str, vmid: int | str, suffix: str = '', guest_type: str = QEMU) -> str:
    """Guest ``vmid``'s path on ``node``, with ``suffix`` (``/config``, ``/status/current``, ...)."""
    return f'{guests_path(node, guest_type)}/{vmid}{suffix}'
