# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_guest: the API path of a VM or a container, spelled once."""

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._guest import LXC, guest_path, guests_path, ha_resource, noun


def test_a_vm_is_under_qemu_and_a_container_under_lxc():
    assert guest_path('pve1', 101, '/config') == '/nodes/pve1/qemu/101/config'
    assert guest_path('pve2', '200', '/status/current', guest_type=LXC) == '/nodes/pve2/lxc/200/status/current'
    assert guests_path('pve1') == '/nodes/pve1/qemu'


def test_another_guest_type_is_refused():
    with pytest.raises(ValueError, match="guest type 'openvz' is not one of qemu, lxc"):
        guest_path('pve1', 101, guest_type='openvz')


def test_messages_call_a_guest_by_its_type_and_name_its_ha_resource_as_ha_manager_does():
    assert (noun(), noun(LXC)) == ('VM', 'container')
    assert (ha_resource(100), ha_resource(200, LXC)) == ('vm:100', 'ct:200')
