# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_os_template's pure core (module_utils/_ostemplate.py): an OS template named by its package or file name, the
newest version on the node's storages, else the newest of its appliance index to download onto the first storage."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._ostemplate import OsTemplateError, Resolution, is_os_template_name, matches, resolve

DEBIAN_OLD, DEBIAN_NEW = 'debian-12-standard_12.9-1_amd64.tar.zst', 'debian-12-standard_12.10-1_amd64.tar.zst'
INDEX = [
    {'template': DEBIAN_OLD, 'package': 'debian-12-standard', 'type': 'lxc'},
    {'template': DEBIAN_NEW, 'package': 'debian-12-standard', 'type': 'lxc'},
    {'template': 'ubuntu-24.04-standard_24.04-2_amd64.tar.zst', 'package': 'ubuntu-24.04-standard', 'type': 'lxc'},
]


def test_a_name_is_the_package_or_the_whole_file_name_and_never_a_volume_or_a_vmid():
    assert matches('debian-12-standard', DEBIAN_NEW) and matches(DEBIAN_NEW, DEBIAN_NEW)
    assert not matches('debian-12', DEBIAN_NEW) and not matches('debian-12-standard_12', DEBIAN_NEW)
    assert [is_os_template_name(name) for name in ('debian-12-standard', f'local:vztmpl/{DEBIAN_NEW}', '9000', 'a b')] == [True, False, False, False]


def test_the_newest_version_on_a_storage_wins_numbers_compared_as_numbers():
    volumes = {f'local:vztmpl/{DEBIAN_OLD}': DEBIAN_OLD, f'nfs:vztmpl/{DEBIAN_NEW}': DEBIAN_NEW}
    assert resolve('debian-12-standard', 'pve1', volumes, INDEX, ['local']) == Resolution(f'nfs:vztmpl/{DEBIAN_NEW}')
    assert resolve(DEBIAN_OLD, 'pve1', volumes, INDEX, ['local']) == Resolution(f'local:vztmpl/{DEBIAN_OLD}')


def test_a_name_on_no_storage_is_the_newest_of_the_index_downloaded_onto_the_first_storage():
    assert resolve('debian-12-standard', 'pve1', {}, INDEX, ['local', 'nfs']) == Resolution(
        f'local:vztmpl/{DEBIAN_NEW}', {'storage': 'local', 'template': DEBIAN_NEW}
    )


@pytest.mark.parametrize(
    ('name', 'storages', 'problem'),
    [
        ('debian-99-standard', ['local'], "name 'debian-99-standard' is no OS template on the storages of node pve1 nor in its appliance index"),
        ('ubuntu-24.04-standard', [], "name 'ubuntu-24.04-standard' is to be downloaded, but node pve1 has no active storage for OS templates"),
    ],
)
def test_a_name_found_nowhere_or_with_no_storage_to_download_to_is_an_error(name, storages, problem):
    with pytest.raises(OsTemplateError) as raised:
        resolve(name, 'pve1', {}, INDEX, storages)
    assert str(raised.value).startswith(problem)


def test_a_name_found_nowhere_on_a_node_whose_index_is_empty_says_to_update_the_index():
    with pytest.raises(OsTemplateError) as raised:
        resolve('debian-12-standard', 'pve1', {}, [], ['local'])
    assert str(raised.value).endswith('its index is empty: run `pveam update` on the node, or give the volume of an OS template')
