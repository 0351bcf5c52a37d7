# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bake of golden templates (roles/reconcile/tasks/template.yml) against the lab: real build VMs reached over
real SSH, a real provision playbook with a role, generalization in the build VM's home, conversion, blue/green
rebuilds with linked clones, a failing build, and a second run waiting for the first one's build.

The provision playbook plays an OS: it writes a machine id, its D-Bus copy and an SSH host key under the guest's
home (where the lab's guests run their commands), and appends a mark to ~/marks; pve_generalize_root points the
generalization at that home.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_template_bake.py -n 2
"""

from __future__ import annotations

import os
import sys
import textwrap
import threading

import lab_vms
from polling import wait_until

from ansible_collections.puls.proxmox.plugins.module_utils import _notes, _template_plan
from playbooks import run_playbook

BAKE = [
    {
        'name': 'Bake',
        'hosts': 'pve_templates',
        'gather_facts': False,
        'tasks': [{'name': 'Bake the template', 'ansible.builtin.include_role': {'name': 'puls.proxmox.reconcile', 'tasks_from': 'template'}}],
    }
]
NAME = 'web-golden'
BASE = 'site/base.yml'


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def write_project(root, version='v1', extra_task=''):
    """site/base.yml with the role `os`: an OS identity under $HOME, and a mark naming the role's version."""
    write(
        root / BASE,
        '''\
        - name: Base image
          hosts: all
          gather_facts: false
          roles:
            - os
        ''',
    )
    write(
        root / 'site/roles/os/tasks/main.yml',
        textwrap.dedent('''\
        - name: Lay down an OS identity and leave a mark
          ansible.builtin.shell: |
            mkdir -p "$HOME/etc/ssh" "$HOME/var/lib/dbus"
            echo 0123456789abcdef0123456789abcdef > "$HOME/etc/machine-id"
            cp "$HOME/etc/machine-id" "$HOME/var/lib/dbus/machine-id"
            echo host-key > "$HOME/etc/ssh/ssh_host_ed25519_key"
            echo "base {{ os_version }}" >> "$HOME/marks"
          changed_when: true
        ''')
        + textwrap.dedent(extra_task),
    )
    write(root / 'site/roles/os/defaults/main.yml', f'os_version: {version}\n')


def inventory(**declared):
    template = {
        'pve_image': 'ubuntu-24.04-cloud',
        'pve_cores': 2,
        'pve_tags': ['golden'],
        'pve_provision': [BASE],
        'pve_ssh_user': 'alice',
        'pve_guest_python': sys.executable,
        'pve_generalize_root': '~alice',
        'pve_template_wait_delay': 1,
    }
    template.update(declared)
    return {'all': {'children': {'pve_templates': {'hosts': {NAME: template}}}}}


def bake(lab, tmp_path, name, check=False, ok=True, **declared):
    run = run_playbook(tmp_path, BAKE, lab.env, inventory=inventory(**declared), check=check, name=name)
    assert (run.rc == 0) is ok, run.stdout + run.stderr
    return run


def role_result(run, task):
    found = [r for r in run.results if r['task'].endswith(' : ' + task) and r['status'] != 'skipped']
    assert len(found) == 1, f'expected one result of {task!r}, got {len(found)}:\n{run.stdout}'
    return found[0]['result']


def guests(lab):
    """name -> (vmid, config) of every guest in the lab."""
    return lab.call(lambda: {vm.config.get('name'): (vm.vmid, dict(vm.config)) for vm in lab.pve.vms})


def clones_sent(lab):
    return [request for request in lab.requests() if request.method == 'POST' and request.path.endswith('/clone')]


def test_a_bake_makes_a_clean_generalized_template_once_and_then_nothing_happens(lab, tmp_path):
    write_project(tmp_path)

    planned = bake(lab, tmp_path, 'check', check=True)
    assert role_result(planned, 'Report the bake')['msg'] == f'{NAME}: build'
    assert lab.writes() == [] and lab.ssh_connections() == 0

    # No pve_ip: the build VM's name is not in DNS, so it takes DHCP and is reached at the address its agent reports.
    baked = bake(lab, tmp_path, 'bake')
    build = role_result(baked, 'Create and start the build VM')
    assert build['address'] in lab.dhcp_pool and build['diff']['after']['ipconfig0'] == 'ip=dhcp'
    vmid, config = guests(lab)[NAME]
    assert vmid == build['vmid'] and f'{NAME}-build' not in guests(lab)
    # The declared tags stay on the template; the building mark does not.
    assert config['template'] == 1 and set(config['tags'].split(';')) == {'golden', 'puls-managed'}
    assert not set(config) & {'ciuser', 'cipassword', 'sshkeys', 'ipconfig0', 'nameserver', 'searchdomain'}
    assert lab.call(lambda: lab.pve.cloudinit_regenerated(vmid)) and lab.call(lambda: lab.pve.vm(vmid).cloudinit_drive) == {}
    hashes = role_result(baked, 'Hash the template\'s provision files')['hashes']
    assert _notes.parse(config['description']).entries == hashes
    assert _template_plan.recorded_entries(config['description'])['spec'] == role_result(baked, 'Convert the build VM into the template')['spec_hash']
    # Provisioned over SSH with a key made for this build, then generalized in the build VM's home.
    guest = lab.guest(vmid)
    assert (guest.home / 'marks').read_text() == 'base v1\n'
    assert (guest.home / 'etc/machine-id').read_text() == ''
    assert not (guest.home / 'var/lib/dbus/machine-id').exists() and not list((guest.home / 'etc/ssh').iterdir())
    assert guest.cloud_init_cleans == ['--logs']
    key_dir = role_result(baked, "Make a directory for the build's temporary SSH key")['path']
    assert build['diff']['after']['sshkeys'][0].endswith(f'puls-build@{NAME}') and not os.path.exists(key_dir)

    connections, writes = lab.ssh_connections(), len(lab.writes())
    again = bake(lab, tmp_path, 'again')
    checked = bake(lab, tmp_path, 'check-again', check=True)
    for run in (again, checked):
        assert role_result(run, 'Report the bake')['msg'] == f'{NAME}: ok' and not run.changed
    assert (lab.ssh_connections(), len(lab.writes())) == (connections, writes)


def test_a_rebuild_names_its_reason_retires_the_template_linked_clones_use_and_a_failed_one_leaves_it_alone(lab, tmp_path):
    api = lab_vms.client(lab)
    write_project(tmp_path)
    bake(lab, tmp_path, 'bake', pve_ip=f'{lab.address(1)}/24', pve_gateway=lab.gateway)
    old_vmid, _config = guests(lab)[NAME]
    api.wait_task(api.create_vm(f'/nodes/pve1/qemu/{old_vmid}/clone', 300, name='app1', full=0), 60)
    template_next = 9018
    api.wait_task(api.create_vm('/nodes/pve1/qemu/9017/clone', template_next, name='ubuntu-24.04-next', full=1), 60)
    api.run_task('POST', f'/nodes/pve1/qemu/{template_next}/template')

    write_project(tmp_path, version='v2')  # the playbook's role changed
    changed = {'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway, 'pve_cores': 4, 'pve_image': 'ubuntu-24.04-next'}
    planned = bake(lab, tmp_path, 'check', check=True, **changed)
    assert role_result(planned, 'Report the bake')['msg'] == (
        f'{NAME}: rebuild (provision file {BASE} changed; cores 2 -> 4; base image changed (now template ubuntu-24.04-next (9018 on pve1)))'
    )

    rebuilt = bake(lab, tmp_path, 'rebuild', **changed)
    previous = role_result(rebuilt, 'Convert the build VM into the template')['previous']
    assert (previous['vmid'], previous['action'], previous['linked_clones']) == (old_vmid, 'retired', ['app1 (300)'])
    names = guests(lab)
    new_vmid, config = names[NAME]
    assert new_vmid != old_vmid and api.vm_config('pve1', new_vmid)['cores'] == 4 and (lab.guest(new_vmid).home / 'marks').read_text() == 'base v2\n'
    retired_vmid, retired = names[previous['name']]
    assert retired_vmid == old_vmid and 'puls-retired' in retired['tags'] and retired['template'] == 1
    api.run_task('POST', '/nodes/pve1/qemu/300/status/start')
    assert api.get('/nodes/pve1/qemu/300/status/current')['status'] == 'running'

    write_project(
        tmp_path,
        version='v3',
        extra_task='''\
        - name: Install the web tier
          ansible.builtin.command: sh -c 'echo "no space left for the web tier" >&2; exit 3'
          changed_when: true
        ''',
    )
    # The first destroy of the failed build ends in a task error: it is tried again, so no build VM stays behind
    # for the next run to wait for.
    lab.call(lambda: lab.pve.fail('DELETE', '/nodes/{node}/qemu/{vmid}', error='failed_remove_config_file', times=1))
    failed = bake(lab, tmp_path, 'failing', ok=False, **changed)
    message = role_result(failed, 'Fail with what went wrong')['msg']
    assert f'building template {NAME} failed' in message and 'no space left for the web tier' in message
    assert 'its build VM is destroyed' in message
    destroys = [request for request in lab.writes() if request.method == 'DELETE' and '/qemu/' in request.path]
    assert len(destroys) == 2 and destroys[0].path == destroys[1].path, destroys
    after = guests(lab)
    assert f'{NAME}-build' not in after and after[NAME] == (new_vmid, config)


def test_a_second_run_waits_for_the_build_another_run_is_making_and_clones_nothing(lab, tmp_path):
    release = tmp_path / 'release'
    write_project(
        tmp_path,
        extra_task=f'''\
        - name: Hold the build until the test releases it
          ansible.builtin.wait_for:
            path: {release}
            timeout: 120
        ''',
    )
    first = {}
    runner = threading.Thread(target=lambda: first.update(run=bake(lab, tmp_path, 'first')))
    runner.start()
    # The first run's build VM is up and provisioning (it is blocked in the playbook) before the second run starts.
    wait_until(
        lambda: not runner.is_alive() or any((lab.guest(vmid).home / 'marks').exists() for vmid, _config in guests(lab).values() if vmid != lab_vms.TEMPLATE)
    )
    assert runner.is_alive(), 'the first run ended before its build was held: %s' % first
    building = {vmid for vmid, config in guests(lab).values() if 'puls-building' in (config.get('tags') or '')}
    queries = len(_lease_reads(lab))
    second = {}
    waiter = threading.Thread(target=lambda: second.update(run=bake(lab, tmp_path, 'second')))
    waiter.start()
    # The second run has asked for the build's lease (the first run's, docs/concurrency.md) at least twice: it is
    # waiting, not building.
    assert wait_until(lambda: len(_lease_reads(lab)) >= queries + 2), 'the second run never asked for the lease'
    release.write_text('go')
    runner.join(300)
    waiter.join(300)

    assert role_result(first['run'], 'Convert the build VM into the template')['changed']
    assert role_result(second['run'], 'Report the bake')['msg'] == f'{NAME}: ok' and not second['run'].changed
    assert len(clones_sent(lab)) == 1 and guests(lab)[NAME][0] in building


def _lease_reads(lab):
    return [request for request in lab.requests() if request.method == 'GET' and request.path.endswith('/nodes/pve1/config')]
