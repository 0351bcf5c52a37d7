# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for what another process reaches in its own time (a concurrent run, the lab): a bound, never a timing
assertion."""

from __future__ import annotations

import threading


def wait_until(condition, timeout=120, interval=0.1):
    """Poll condition until it holds (True) or timeout seconds pass (False)."""
    event = threading.Event()
    for _attempt in range(int(timeout / interval)):
        if condition():
            return True
        event.wait(interval)
    return False
