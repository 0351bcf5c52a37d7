# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cloning a container in its source's turn: PVE copies a container one clone at a time.

pve-container's ``clone_vm`` (src/PVE/API2/LXC.pm) sets an exclusive ``disk`` lock on the source container before its
worker starts and removes it only once every volume is copied, for a linked clone too; a clone asked for meanwhile is
refused "CT is locked (disk)" (pve-guest-common src/PVE/AbstractConfig.pm, ``set_lock`` -> ``check_lock``). A VM's
clone takes a shared lock instead (qemu-server PVE/API2/Qemu.pm, ``clone_vm``), so VM clones of one template run side
by side and need none of this.

So the processes of this controller that clone one source take turns (a controller-wide lock per source,
``_vmid.controller_lock``), and the one whose turn it is waits until PVE shows the source unlocked (another
controller's clone, a backup) before it sends its clone; one refused because the source was locked meanwhile waits
again and sends again. None of this waits while holding the VMID lock, which every other creation of the controller
takes (``_vmid.create_with_new_vmid`` holds it only to pick an id and send the request). All within one deadline.
"""

from __future__ import annotations

import time

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError, is_guest_locked
from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC
from ansible_collections.puls.proxmox.plugins.module_utils._vmid import controller_lock


def _remaining(deadline):
    return max(0.0, deadline - time.monotonic())


def clone_in_turn(client, node, vmid, deadline, context, send):
    """Call send() in the turn of source container vmid on node, once PVE shows it unlocked; returns what send returns.

    send() sends the clone and waits for it, failing at once (not retrying) when PVE answers that the source is
    locked. deadline is a time.monotonic() by which the clone must have been sent."""
    progress = getattr(client, 'progress', None)
    if progress is not None:
        progress.note(f'{context}: waiting for its turn (PVE clones container {vmid} one clone at a time)')
    with controller_lock(client.base_url, f'-clone-{vmid}', _remaining(deadline), f'the turn to clone container {vmid}: the lock'):
        while True:
            try:
                client.wait_unlocked(node, vmid, _remaining(deadline), LXC)
            except PveApiError as exc:
                raise PveApiError(
                    f'{context} failed: container {vmid} stayed locked until the timeout ({exc.reason}); PVE clones a container one clone at a '
                    'time and locks it for each copy: raise timeout to wait longer, or clone fewer containers from it in one run',
                    reason=exc.reason,
                ) from None
            try:
                return send()
            except PveApiError as exc:
                if not is_guest_locked(exc.reason) or _remaining(deadline) <= 0:
                    raise
