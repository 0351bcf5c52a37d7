# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's image: a VMID, an exact or unique partial template name, or an importable volume; never a guess."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, IMPORT, ImageSource, resolve_image
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError

RESOURCES = [
    {'type': 'qemu', 'vmid': 9000, 'name': 'debian-12', 'node': 'pve1', 'template': 1},
    {'type': 'qemu', 'vmid': 9001, 'name': 'debian-12-slim', 'node': 'pve2', 'template': 1},
    {'type': 'qemu', 'vmid': 9002, 'name': 'Ubuntu-Noble', 'node': 'pve1', 'template': 1},
    {'type': 'qemu', 'vmid': 120, 'name': 'noble-builder', 'node': 'pve2', 'template': 0},
    {'type': 'lxc', 'vmid': 130, 'name': 'alpine-ct', 'node': 'pve1', 'template': 0},
]


@pytest.mark.parametrize('image', [9000, '9000', ' 9000 '])
def test_vmid_selects_that_template(image):
    assert resolve_image(image, RESOURCES) == ImageSource(CLONE, vmid=9000, node='pve1', name='debian-12', template=True)


def test_vmid_may_name_a_plain_vm_for_a_full_clone():
    assert resolve_image('120', RESOURCES) == ImageSource(CLONE, vmid=120, node='pve2', name='noble-builder', template=False)


def test_exact_template_name_wins_over_names_that_contain_it():
    assert resolve_image('debian-12', RESOURCES).vmid == 9000


def test_unique_substring_of_a_template_name_selects_it_case_insensitively():
    assert resolve_image('noble', RESOURCES).vmid == 9002


def test_ambiguous_image_lists_every_candidate():
    with pytest.raises(SpecError) as raised:
        resolve_image('debian', RESOURCES)
    message = str(raised.value)
    assert raised.value.option == 'image'
    assert message.startswith("image 'debian' is ambiguous: 2 templates")
    assert 'debian-12 (9000 on pve1)' in message and 'debian-12-slim (9001 on pve2)' in message
    assert 'VMID' in message


def test_two_templates_with_the_exact_name_are_ambiguous():
    twins = RESOURCES + [{'type': 'qemu', 'vmid': 9100, 'name': 'debian-12', 'node': 'pve3', 'template': 1}]
    with pytest.raises(SpecError, match=r"2 templates named it: .*9000 on pve1.*9100 on pve3"):
        resolve_image('debian-12', twins)


def test_image_matching_nothing_is_refused():
    with pytest.raises(SpecError, match=r"^image 'rocky' matches no template"):
        resolve_image('rocky', RESOURCES)


def test_plain_vms_are_not_matched_by_name():
    with pytest.raises(SpecError, match='matches no template'):
        resolve_image('builder', RESOURCES)


def test_unknown_vmid_is_refused():
    with pytest.raises(SpecError, match=r'^image 9999 is not the VMID'):
        resolve_image(9999, RESOURCES)


def test_missing_image_says_what_to_give():
    with pytest.raises(SpecError, match=r'^image is required to create the VM'):
        resolve_image(None, RESOURCES)


@pytest.mark.parametrize('volume', ['local:import/noble.qcow2', 'nfs:import/debian-12.raw', 'local:100/vm-100-disk-0.qcow2'])
def test_importable_volume_is_imported(volume):
    assert resolve_image(volume, RESOURCES) == ImageSource(IMPORT, volume=volume)


@pytest.mark.parametrize('volume', ['local:iso/noble.img', 'local:import/noble.img', 'local:vztmpl/x.tar.zst'])
def test_volume_pve_cannot_import_from_is_refused(volume):
    with pytest.raises(SpecError, match=r'^image .* is not a volume PVE can import a disk from'):
        resolve_image(volume, RESOURCES)


def test_url_is_refused_with_the_way_to_download_it():
    with pytest.raises(SpecError, match=r'^image .* is a URL; download it .*pve_iso'):
        resolve_image('https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img', RESOURCES)


def test_linked_clone_of_a_plain_vm_is_refused():
    with pytest.raises(SpecError) as raised:
        resolve_image('120', RESOURCES, linked_clone=True)
    assert raised.value.option == 'linked_clone'


def test_linked_clone_of_an_import_is_refused():
    with pytest.raises(SpecError, match=r'^linked_clone needs a template to clone'):
        resolve_image('local:import/noble.qcow2', RESOURCES, linked_clone=True)


def test_sources_describe_themselves_for_the_diff():
    assert resolve_image('noble', RESOURCES).describe() == 'template Ubuntu-Noble (9002 on pve1)'
    assert resolve_image('local:import/noble.qcow2', RESOURCES).describe() == 'import of local:import/noble.qcow2'
