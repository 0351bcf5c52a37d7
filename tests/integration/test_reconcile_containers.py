# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Containers (group pve_containers) through puls.proxmox.site against the lab: planned, created from the OS template
that pve_isos downloads, provisioned over SSH as root, then left alone by a run that ends at the one-pass check (no SSH,
no write); last, one declared absent is destroyed and an undeclared one pruned. One fleet, few runs.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_reconcile_containers.py -p no:xdist
"""

from __future__ import annotations

import sys
import textwrap
import threading

import lab_vms
import pytest
import test_plan_equals_run
from lab.images import CONTAINER_TEMPLATE
from polling import wait_until
from pve_vm_plays import sent

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'
MARK = '''\
- name: Mark the container
  hosts: all
  gather_facts: false
  tasks:
    - name: Leave a mark
      ansible.builtin.shell: echo "marked by {{ inventory_hostname }} as $USER" >> "$HOME/marks"
      changed_when: true
'''


def site(lab, tmp_path, inventory, name, check=False):
    run = run_playbook(tmp_path, SITE, lab.env, inventory=inventory, check=check, name=name)
    assert run.rc == 0, run.stdout + run.stderr
    return run


def containers(lab):
    """host name -> (vmid, status, config) of every container of the lab."""
    return lab.call(lambda: {ct.config.get('hostname'): (ct.vmid, ct.status, dict(ct.config)) for ct in lab.pve.cts})


def fleet(lab, tmp_path, templates, cts):
    """The inventory of templates and containers (host -> variables), root's SSH key made in tmp_path (once), and the
    Debian container template downloaded by pve_isos."""
    key, public = (
        (tmp_path / 'id_ed25519', (tmp_path / 'id_ed25519.pub').read_text().strip()) if (tmp_path / 'id_ed25519').exists() else lab_vms.ssh_key(tmp_path)
    )
    download = {'filename': CONTAINER_TEMPLATE, 'content': 'vztmpl', 'storage': 'local', 'node': 'pve1', 'url': lab.served.url(CONTAINER_TEMPLATE)}
    return {
        'all': {
            'vars': {
                # Root's SSH keys are pve_ssh_keys, as the role gives them to every container made from an OS template.
                'pve_ssh_user': 'root',
                'pve_ssh_keys': [public],
                'pve_ssh_private_key_file': str(key),
                'pve_guest_python': sys.executable,
                'pve_provision_dir': str(tmp_path),
                'pve_nodes': lab.nodes,
                'pve_template_wait_delay': 1,
                'pve_isos': [download],
            },
            'children': {'pve_templates': {'hosts': templates}, 'pve_containers': {'hosts': cts}},
        }
    }


@pytest.mark.slow(minutes=2)
def test_a_container_fleet_is_planned_created_provisioned_then_left_alone_without_ssh_and_destroyed_or_pruned(lab, tmp_path):
    (tmp_path / 'mark.yml').write_text(textwrap.dedent(MARK))
    volume = f'local:vztmpl/{CONTAINER_TEMPLATE}'
    declared = {'image': volume, 'storage': 'local-lvm', 'node': 'pve1', 'gateway': lab.gateway}
    hosts = {
        'dns1': {'pve_container': dict(declared, ip=f'{lab.address(31)}/24', cores=1, memory=256, tags=['dns']), 'pve_provision': ['mark.yml']},
        'cache1': {'pve_container': dict(declared, ip=f'{lab.address(32)}/24', memory=512)},
    }
    inventory = fleet(lab, tmp_path, {}, hosts)

    planned = site(lab, tmp_path, inventory, 'plan', check=True)
    assert lab.writes() == [] and lab.ssh_connections() == 0
    assert planned.plans == {CONTAINER_TEMPLATE: ['create'], 'dns1': ['create', 'provision mark.yml'], 'cache1': ['create']}

    applied = site(lab, tmp_path, inventory, 'apply')
    assert applied.plans == planned.plans
    made = containers(lab)
    assert set(made) == {'dns1', 'cache1'}
    dns1_vmid, status, config = made['dns1']
    assert status == 'running' and (config['cores'], config['memory']) == (1, 256) and config['tags'] == 'dns;puls-managed'
    assert f'ip={lab.address(31)}/24' in config['net0'] and '[puls-provision: mark.yml=' in config['description']
    marks = lab.guest(dns1_vmid).home / 'marks'
    assert marks.read_text().splitlines() == ['marked by dns1 as root']

    connections, writes = lab.ssh_connections(), len(lab.writes())
    again = site(lab, tmp_path, inventory, 'again')
    assert not again.changed, again.stdout
    assert again.plans == {CONTAINER_TEMPLATE: ['ok'], 'dns1': ['ok'], 'cache1': ['ok']}
    # The one-pass check vouched for both: no container task ran, no SSH connection, no write.
    assert again.for_task('Create or converge the container') == []
    assert (lab.ssh_connections(), len(lab.writes())) == (connections, writes)

    # dns1 declared absent, cache1 no longer declared and pruned: both go, and the plan names each.
    hosts['dns1']['pve_state'] = 'absent'
    del hosts['cache1']
    inventory['all']['vars']['pve_prune'] = True
    gone = site(lab, tmp_path, inventory, 'gone')
    assert gone.plans == {CONTAINER_TEMPLATE: ['ok'], 'dns1': ['destroy'], 'cache1': ['prune']}
    assert containers(lab) == {}


def add_directory_storage(pve):
    """A directory storage for container volumes (the seed's local holds none)."""
    pve.storages['ctdir'] = {'type': 'dir', 'active': 1, 'content': 'rootdir', 'files': set(), 'path': '/mnt/ctdir'}


def sizes(lab, name):
    """(config size=, the storage's size in MiB) of each volume of container name, by key."""
    config = containers(lab)[name][2]
    volumes = {key: config[key].split(',') for key in ('rootfs', 'mp0') if key in config}
    return {
        key: (next(prop for prop in props if prop.startswith('size=')), lab.call(lambda volid=props[0]: lab.pve.ct_volume_size(volid)) // 1024**2)
        for key, props in volumes.items()
    }


@pytest.mark.slow(minutes=2)
def test_containers_of_1500m_are_created_at_exactly_1500m_on_directory_and_lvm_thin_storage_and_then_left_alone(lab, tmp_path):
    """pve-container src/PVE/LXC.pm create_disks takes int(GiB * 1024) MiB of the size sent; its resize_vm compares with
    the volume's own size, which LVM rounds up to 4 MiB extents."""
    lab.call(lambda: add_directory_storage(lab.pve))
    volume = f'local:vztmpl/{CONTAINER_TEMPLATE}'
    declared = {'image': volume, 'node': 'pve1', 'gateway': lab.gateway, 'disk_size': '1500M'}
    hosts = {
        'lvm1': {'pve_container': dict(declared, storage='local-lvm', ip=f'{lab.address(33)}/24', mount_points=[{'slot': 0, 'path': '/srv', 'size': '100M'}])},
        'dir1': {'pve_container': dict(declared, storage='ctdir', ip=f'{lab.address(34)}/24')},
    }
    inventory = fleet(lab, tmp_path, {}, hosts)
    assert site(lab, tmp_path, inventory, 'apply').plans == {CONTAINER_TEMPLATE: ['create'], 'lvm1': ['create'], 'dir1': ['create']}
    assert sizes(lab, 'lvm1') == {'rootfs': ('size=1500M', 1500), 'mp0': ('size=100M', 100)}
    assert sizes(lab, 'dir1') == {'rootfs': ('size=1500M', 1500)}
    again = site(lab, tmp_path, inventory, 'again')
    assert not again.changed and again.plans == {CONTAINER_TEMPLATE: ['ok'], 'lvm1': ['ok'], 'dir1': ['ok']}, again.stdout

    # As an earlier release made it: 1499M in the config, the 1500M LV PVE refuses to grow to 1500M. Nothing to do.
    vmid = containers(lab)['lvm1'][0]
    lab.call(lambda: lab.pve.ct(vmid).config.update(rootfs=lab.pve.ct(vmid).config['rootfs'].replace('size=1500M', 'size=1499M')))
    assert sizes(lab, 'lvm1')['rootfs'] == ('size=1499M', 1500)
    for name in ('short', 'short-again'):
        run = site(lab, tmp_path, inventory, name)
        assert not run.changed and run.plans == {CONTAINER_TEMPLATE: ['ok'], 'lvm1': ['ok'], 'dir1': ['ok']}, run.stdout


def container_template(lab, vmid, name):
    """A container template made by hand (create from the OS template, convert), as pve-container's template does."""

    def make():
        data = lab.served.files[CONTAINER_TEMPLATE]
        lab.pve.store_file('local', CONTAINER_TEMPLATE, len(data), 'vztmpl')
        lab.pve.volume_data[f'local:vztmpl/{CONTAINER_TEMPLATE}'] = data
        lab.pve.add_ct(vmid, name, config={'rootfs': f'local-lvm:base-{vmid}-disk-0,size=1G', 'tags': 'golden'}, template=True)

    lab.call(make)


def created(lab, name):
    """Whether the guest named name exists and its create or clone has ended (its lock gone)."""
    return lab.call(lambda: any(guest.name == name and not guest.lock for guest in [*lab.pve.vms, *lab.pve.cts]))


@pytest.mark.slow(minutes=4)
@pytest.mark.lab(time_scale=0.01, clone_secs=200)
def test_eight_containers_cloned_at_once_from_one_template_take_turns_and_hold_up_no_other_creation(lab, tmp_path):
    """pve-container src/PVE/API2/LXC.pm clone_vm holds the source's disk lock for the whole copy (2 s each here): eight
    full clones of one template by eight forks at once take turns and all converge, with no clone refused. While
    another clone of the template holds its lock, a container made from the OS template in the same task and a VM of
    a run started beside it are created: the lock is let go only once both are, so neither waited for the clones."""
    container_template(lab, 150, 'ct-base')
    cache = str(tmp_path / 'cache')  # one controller: both runs share its VMID lock
    (tmp_path / 'cts').mkdir()
    (tmp_path / 'vms').mkdir()
    clones = {f'ct{n}': {'pve_container': {'image': 'ct-base', 'ip': f'{lab.address(50 + n)}/24', 'gateway': lab.gateway}} for n in range(8)}
    web = {
        'pve_container': {
            'image': f'local:vztmpl/{CONTAINER_TEMPLATE}',
            'storage': 'local-lvm',
            'node': 'pve1',
            'ip': f'{lab.address(60)}/24',
            'gateway': lab.gateway,
        }
    }
    containers_run = fleet(lab, tmp_path / 'cts', {}, {**clones, 'web1': web})
    vms_run = test_plan_equals_run.fleet(
        lab, tmp_path / 'vms', {}, {'vm1': {'pve_image': 'ubuntu-24.04-cloud', 'pve_ip': f'{lab.address(61)}/24', 'pve_gateway': lab.gateway}}
    )

    # Another user's clone of the template holds its disk lock until web1 and vm1 are made.
    lab.call(lambda: setattr(lab.pve.ct(150), 'lock', 'disk'))
    held = {}

    def release_once_both_are_made():
        held['waited_for_both'] = wait_until(lambda: created(lab, 'web1') and created(lab, 'vm1'), timeout=240)
        lab.call(lambda: setattr(lab.pve.ct(150), 'lock', None))

    runs = {}
    threads = [
        threading.Thread(target=release_once_both_are_made),
        threading.Thread(
            target=lambda: runs.update(
                cts=run_playbook(tmp_path / 'cts', SITE, dict(lab.env, ANSIBLE_FORKS='10', XDG_CACHE_HOME=cache), inventory=containers_run, name='cts')
            )
        ),
    ]
    for thread in threads:
        thread.start()
    # The VM's run starts once the containers' run holds its leases (two runs on an idle lab are another matter).
    assert wait_until(lambda: 'vm/ct0' in lab.call(lambda: lab.pve.node_config_file('pve1')), timeout=120)
    runs['vms'] = test_plan_equals_run.site(lab, tmp_path / 'vms', vms_run, 'vms', XDG_CACHE_HOME=cache)
    for thread in threads:
        thread.join(300)
    assert runs['vms'].rc == 0, test_plan_equals_run.why(runs['vms'])
    assert runs['cts'].rc == 0, test_plan_equals_run.why(runs['cts'])
    assert held['waited_for_both'], 'web1 or vm1 waited for the clones of the locked template'
    made = containers(lab)
    assert set(made) == {'ct-base', 'web1', *clones}, made
    # Eight clone requests, one per container, none refused: each was sent in its turn, once the template was unlocked.
    assert sorted(form['hostname'] for form in sent(lab, 'POST', '/lxc/150/clone')) == sorted(clones)
    # In the order PVE started them: web1's create and vm1's clone came before the first copy of the template.
    started = lab.call(lambda: [(task['type'], task['status'], task.get('exitstatus')) for task in lab.pve.tasklog])
    kinds = [kind for kind, _status, _exit in started if kind in ('vzcreate', 'qmclone', 'vzclone')]
    assert sorted(kinds[:2]) == ['qmclone', 'vzcreate'] and kinds[2:] == ['vzclone'] * 8, kinds
    assert [exitstatus for kind, _status, exitstatus in started if kind == 'vzclone'] == ['OK'] * 8
