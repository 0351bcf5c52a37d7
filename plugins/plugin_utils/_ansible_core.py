# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ansible-core releases the collection supports, and which of them run its modules inside the task's worker.

make matrix (hacking/matrix, tests/matrix/versions) proves each release from OLDEST to NEWEST: ansible-test sanity,
the unit tests and the demo fleet's runs through site.yml. meta/runtime.yml's requires_ansible says the same; Ansible
only warns when a collection's requires_ansible excludes the running release, so require() makes a start there fail
with the releases that work, instead of a later "Unexpected Exception".
"""

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.release import __version__

OLDEST = (2, 16)
NEWEST = (2, 21)
# Where running a module in the worker (plugin_utils/_in_worker.py) is proven: it uses ansible-core internals that
# 2.19 introduced (the module serialization profiles, ansible.module_utils.common.json's Direction) and 2.21 changed
# (the result object of ActionBase._parse_returned_data). Elsewhere modules run as Ansible runs any module.
IN_WORKER = frozenset({(2, 19), (2, 20), (2, 21)})
SUPPORTED = f'ansible-core {OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}'


def release(version: str = __version__) -> tuple[int, int]:
    """The (major, minor) of an ansible-core version string such as 2.21.5 or 2.20.0rc1."""
    major, minor = version.split('.')[:2]
    return int(major), int(''.join(digit for digit in minor if digit.isdigit()) or 0)


def supported(version: str = __version__) -> bool:
    return OLDEST <= release(version) <= NEWEST


def require(version: str = __version__) -> None:
    """AnsibleError naming the supported releases unless version (the running ansible-core's) is one of them."""
    if not supported(version):
        raise AnsibleError(
            f'puls.proxmox supports {SUPPORTED} (meta/runtime.yml requires_ansible), and this is ansible-core {version}: '
            f'run it with a supported ansible-core (pip install "ansible-core>={OLDEST[0]}.{OLDEST[1]},<{NEWEST[0]}.{NEWEST[1] + 1}")'
        )


def runs_in_worker(version: str = __version__) -> bool:
    """Whether modules may run inside the task's worker on this ansible-core."""
    return release(version) in IN_WORKER
