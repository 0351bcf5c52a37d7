# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_container through real ansible-playbook runs against the lab: create, update, grow, power, faults, SSH.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_container.py -p no:xdist
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
import requests
from lab.images import CONTAINER_TEMPLATE
from polling import wait_until
from pve_vm_plays import sent, ssh_public_key, vm_env

from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import CT_ARGUMENT_SPEC
from playbooks import four_runs, run_playbook

TASK = 'pve_container'
TEMPLATE = f'local:vztmpl/{CONTAINER_TEMPLATE}'
PASSWORD = 'ct-root-Secret-4711'


def ct_task():
    """The pve_container task: name from the inventory host, every option from the host's `ct` (omitted when unset)."""
    args = {'name': '{{ inventory_hostname }}'}
    args.update((option, '{{ ct.%s | default(omit) }}' % option) for option in CT_ARGUMENT_SPEC if option != 'name')
    return {'name': TASK, 'puls.proxmox.pve_container': args}


def ct_play(*before):
    return [{'name': 'Containers', 'hosts': 'all', 'gather_facts': False, 'tasks': [*before, ct_task()]}]


def cts(hosts):
    return {'all': {'vars': {'ansible_connection': 'local'}, 'hosts': {name: {'ct': options} for name, options in hosts.items()}}}


def put_template(lab):
    """The Debian template on local, as pve_iso's download (test_the_template_downloads_...) leaves it."""
    data = lab.served.files[CONTAINER_TEMPLATE]

    def store():
        lab.pve.store_file('local', CONTAINER_TEMPLATE, len(data), 'vztmpl')
        lab.pve.volume_data[TEMPLATE] = data

    lab.call(store)


def container(lab, name):
    found = lab.call(lambda: [ct for ct in lab.pve.cts if ct.config.get('hostname') == name])
    assert len(found) == 1, f'expected one container named {name}, found {len(found)}'
    return found[0]


def all_cts(lab):
    return lab.call(lambda: {ct.vmid: dict(ct.config) for ct in lab.pve.cts})


def ssh(tmp_path, key, target, command):
    argv = ['ssh', '-i', str(key), '-o', f'UserKnownHostsFile={tmp_path / "known_hosts"}', '-o', 'StrictHostKeyChecking=accept-new', '-o', 'BatchMode=yes']
    return subprocess.run([*argv, target, command], capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.lab(time_scale=0.01)
def test_a_container_is_created_with_every_main_option_in_four_runs_and_root_logs_in_with_its_key(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    public = ssh_public_key(tmp_path)
    ip = lab.address(21)
    download = {
        'name': 'Download the Debian container template',
        'puls.proxmox.pve_iso': {
            'url': lab.served.url(CONTAINER_TEMPLATE),
            'filename': CONTAINER_TEMPLATE,
            'content': 'vztmpl',
            'storage': 'local',
            'node': 'pve1',
        },
        'run_once': True,
    }
    declared = {
        'image': TEMPLATE,
        'storage': 'local-lvm',
        'disk_size': '2G',
        'cores': 2,
        'memory': 1024,
        'swap': 256,
        'mount_points': [{'slot': 0, 'path': '/srv/data', 'size': '1G'}],
        'ip': f'{ip}/24',
        'gateway': lab.gateway,
        'vlan': 20,
        'firewall': True,
        'nameservers': ['127.0.0.53'],
        'searchdomain': 'lab.test',
        'unprivileged': True,
        'features': ['nesting'],
        'ssh_keys': [public],
        'password': PASSWORD,
        'onboot': True,
        'protection': False,
        'tags': ['cache'],
        'state': 'started',
    }
    runs = four_runs(tmp_path, ct_play(download), env, cts({'ct-main': declared}))
    result = runs.real.one(TASK, 'ct-main')
    assert (result['status'], result['address'], result['node']) == ('running', ip, 'pve1')
    assert runs.check.one(TASK, 'ct-main')['vmid'] is None  # not allocated in check mode
    ct = container(lab, 'ct-main')
    config = ct.config
    assert result['vmid'] == ct.vmid and ct.status == 'running'
    assert (config['cores'], config['memory'], config['swap'], config['onboot'], config['unprivileged']) == (2, 1024, 256, 1, 1)
    assert config['rootfs'].endswith('size=2G') and config['mp0'].endswith('mp=/srv/data,size=1G')
    assert f'ip={ip}/24' in config['net0'] and 'tag=20' in config['net0'] and 'firewall=1' in config['net0'] and f'gw={lab.gateway}' in config['net0']
    assert (config['nameserver'], config['searchdomain'], config['features']) == ('127.0.0.53', 'lab.test', 'nesting=1')
    assert config['tags'] == 'cache;puls-managed'
    assert f'[puls-owner: puls-managed={ct.vmid}]' in config['description']
    after = result['diff']['after']
    assert after['password'] == '********' and after['disk_size'] == '2G' and after['mp0'] == {'path': '/srv/data', 'size': '1G'}
    for run in (runs.check, runs.real, runs.check_again, runs.real_again):
        assert PASSWORD not in run.stdout + run.stderr, 'the root password never shows'
    assert ['password' in request for request in sent(lab, 'POST', '/lxc')] == [True], 'the password is sent once, with the create'

    done = ssh(tmp_path, tmp_path / 'id_ed25519', f'root@{ip}', 'echo $USER')
    assert (done.returncode, done.stdout.strip()) == (0, 'root'), done.stderr


def create_running(lab, tmp_path, env, name, **options):
    put_template(lab)
    declared = {'image': TEMPLATE, 'storage': 'local-lvm', 'state': 'started', **options}
    run = run_playbook(tmp_path, ct_play(), env, cts({name: declared}), name='create')
    assert run.rc == 0, run.stdout
    return container(lab, name)


@pytest.mark.lab(time_scale=0.01)
def test_cores_and_memory_change_a_running_container_at_once_and_a_feature_waits_for_the_restart_apply_mode_reboot_makes(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    ct = create_running(lab, tmp_path, env, 'ct-upd', cores=1, memory=512, ip=f'{lab.address(22)}/24')
    hot = four_runs(tmp_path, ct_play(), env, cts({'ct-upd': {'cores': 2, 'memory': 1024, 'ip': f'{lab.address(23)}/24'}}))
    result = hot.real.one(TASK, 'ct-upd')
    assert result['changes'] == ['cores', 'memory', 'net0'] and result['reboot_required'] == []
    assert (ct.config['cores'], ct.config['memory'], ct.pending) == (2, 1024, {})
    assert wait_until(lambda: lab.guest(ct.vmid).address == lab.address(23), timeout=10), 'the new address applies at once'

    # src/PVE/LXC/Config.pm vmconfig_hotplug_pending: features are not hot-plugged, they wait for the next start.
    pending = run_playbook(tmp_path, ct_play(), env, cts({'ct-upd': {'features': ['nesting']}}), name='pending')
    assert pending.rc == 0 and pending.one(TASK, 'ct-upd')['reboot_required'] == ['features'], pending.stdout
    again = run_playbook(tmp_path, ct_play(), env, cts({'ct-upd': {'features': ['nesting']}}), name='pending-again')
    assert not again.changed and again.one(TASK, 'ct-upd')['reboot_required'] == ['features'], 'what waits is still reported'
    started = ct.started_at
    restarted = four_runs(tmp_path, ct_play(), env, cts({'ct-upd': {'features': ['nesting'], 'apply_mode': 'reboot'}}))
    assert restarted.real.one(TASK, 'ct-upd')['reboot_required'] == []
    assert ct.started_at != started and ct.status == 'running' and ct.pending == {} and ct.config['features'] == 'nesting=1'
    assert sent(lab, 'POST', f'/lxc/{ct.vmid}/status/shutdown'), 'the restart is a graceful shutdown and a start'


@pytest.mark.lab(time_scale=0.01)
def test_the_root_file_system_and_a_mount_point_grow_and_a_smaller_size_is_refused_naming_the_option(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    ct = create_running(lab, tmp_path, env, 'ct-grow', disk_size='1G', mount_points=[{'slot': 1, 'path': '/data', 'size': '1G'}])
    grown = four_runs(tmp_path, ct_play(), env, cts({'ct-grow': {'disk_size': '3G', 'mount_points': [{'slot': 1, 'path': '/data', 'size': '2G'}]}}))
    diff = grown.real.one(TASK, 'ct-grow')['diff']
    assert (diff['before']['disk_size'], diff['after']['disk_size']) == ('1G', '3G')
    assert (diff['before']['mp1'], diff['after']['mp1']) == ({'path': '/data', 'size': '1G'}, {'path': '/data', 'size': '2G'})
    assert ct.config['rootfs'].endswith('size=3G') and ct.config['mp1'].endswith('size=2G')

    for option, declared in (('disk_size', {'disk_size': '2G'}), ('mount_points', {'mount_points': [{'slot': 1, 'path': '/data', 'size': '1G'}]})):
        before = len(lab.writes())
        refused = run_playbook(tmp_path, ct_play(), env, cts({'ct-grow': declared}), name=f'shrink-{option}')
        failure = refused.one(TASK, 'ct-grow')
        assert refused.rc != 0 and failure['option'] == option and 'cannot shrink' in failure['msg'], failure['msg']
        assert len(lab.writes()) == before, 'nothing was written'


@pytest.mark.lab(time_scale=0.01)
@pytest.mark.parametrize(
    ('declared', 'option', 'words'),
    [
        ({'ip': '127.0.0.300/24'}, 'ip', 'must be an IPv4 address'),
        ({'features': ['nesting', 'mknod']}, 'features', 'value of features must be one or more of'),
        ({'storage': None}, 'storage', 'is required to create container'),
        ({'image': 'local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst'}, 'image', 'is not on storage local of node pve1'),
        ({'ssh_keys': ['ssh-ed25519 not-a-key']}, 'ssh_keys', 'is not an OpenSSH public key'),
        ({'password': 'abc'}, 'password', 'at least 5 characters'),
        ({'mount_points': [{'slot': 300, 'path': '/x', 'size': '1G'}]}, 'mount_points', 'slot must be an integer from 0 to 255'),
    ],
)
def test_bad_input_fails_naming_the_option_and_creates_nothing(lab, tmp_path, declared, option, words):
    put_template(lab)
    options = {key: value for key, value in {'image': TEMPLATE, 'storage': 'local-lvm', **declared}.items() if value is not None}
    run = run_playbook(tmp_path, ct_play(), vm_env(lab, tmp_path), cts({'ct-bad': options}))
    failure = run.one(TASK, 'ct-bad')
    assert run.rc != 0 and words in failure['msg'], failure['msg']
    assert failure.get('option', option) == option and option in failure['msg']
    assert all_cts(lab) == {} and not lab.writes()


@pytest.mark.lab(time_scale=0.01)
def test_a_config_lock_held_by_another_task_is_waited_out(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    ct = create_running(lab, tmp_path, env, 'ct-lock', cores=1)
    writes = f'/lxc/{ct.vmid}/config'
    lab.call(lab.pve.hold_config_lock(ct.vmid, None))
    released = threading.Event()

    def release_after_two_refusals():
        while len(sent(lab, 'PUT', writes)) < 2:
            time.sleep(0.05)
        lab.call(lambda: lab.pve.release_config_lock(ct.vmid))
        released.set()

    threading.Thread(target=release_after_two_refusals, daemon=True).start()
    run = run_playbook(tmp_path, ct_play(), env, cts({'ct-lock': {'cores': 3}}), name='locked')
    assert released.wait(5), 'the module tried again while the lock was held'
    assert run.rc == 0 and run.one(TASK, 'ct-lock')['changed'], run.stdout
    assert ct.config['cores'] == 3


@pytest.mark.lab(time_scale=0.01)
def test_a_failing_start_task_fails_the_run_with_its_exit_status(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    put_template(lab)
    assert run_playbook(tmp_path, ct_play(), env, cts({'ct-fail': {'image': TEMPLATE, 'storage': 'local-lvm'}}), name='create').rc == 0
    ct = container(lab, 'ct-fail')
    ct.start_error = 'startup for container failed'
    run = run_playbook(tmp_path, ct_play(), env, cts({'ct-fail': {'state': 'started'}}), name='start')
    failure = run.one(TASK, 'ct-fail')
    assert run.rc != 0 and failure['task_exitstatus'] == 'startup for container failed', failure
    assert failure['msg'].startswith(f'starting container ct-fail ({ct.vmid} on pve1) failed')
    assert ct.status == 'stopped'


@pytest.mark.lab(time_scale=0.01)
def test_absent_shuts_a_running_container_down_and_destroys_it_once_in_four_runs(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    ct = create_running(lab, tmp_path, env, 'ct-gone', mount_points=[{'slot': 0, 'path': '/data', 'size': '1G'}])
    vmid = ct.vmid
    runs = four_runs(tmp_path, ct_play(), env, cts({'ct-gone': {'state': 'absent'}}))
    assert runs.real.one(TASK, 'ct-gone')['diff'] == {
        'before': {'state': 'present', 'vmid': vmid, 'node': 'pve1', 'status': 'running'},
        'after': {'state': 'absent'},
    }
    assert all_cts(lab) == {} and runs.real_again.one(TASK, 'ct-gone')['status'] == 'absent'
    assert sent(lab, 'POST', f'/lxc/{vmid}/status/shutdown')
    assert len([request for request in lab.requests() if request.method == 'DELETE' and request.path.endswith(f'/lxc/{vmid}')]) == 1, 'destroyed once'


@pytest.mark.lab(time_scale=0.01)
def test_a_protected_container_is_not_destroyed(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    create_running(lab, tmp_path, env, 'ct-keep', protection=True)
    run = run_playbook(tmp_path, ct_play(), env, cts({'ct-keep': {'state': 'absent'}}), name='absent')
    failure = run.one(TASK, 'ct-keep')
    assert run.rc != 0 and failure['option'] == 'state' and 'is protected' in failure['msg']
    assert container(lab, 'ct-keep').status == 'running'


@pytest.mark.lab(time_scale=0.01)
def test_four_containers_created_by_parallel_forks_get_distinct_vmids(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    put_template(lab)
    hosts = {f'ct-par-{n}': {'image': TEMPLATE, 'storage': 'local-lvm', 'memory': 256} for n in range(4)}
    run = run_playbook(tmp_path, ct_play(), env, cts(hosts), extra_args=('--forks', '4'), name='parallel')
    assert run.rc == 0 and len(run.changed) == 4, run.stdout
    vmids = [run.one(TASK, host)['vmid'] for host in hosts]
    assert len(set(vmids)) == 4
    assert sorted(vmids) == sorted(all_cts(lab))
    assert [container(lab, host).vmid for host in hosts] == vmids
    again = run_playbook(tmp_path, ct_play(), env, cts(hosts), extra_args=('--forks', '4'), name='again')
    assert again.rc == 0 and not again.changed


def convert(lab, vmid):
    """Container vmid made a template: PVE answers null and converts in a vztemplate task (pve-container
    src/PVE/API2/LXC.pm template); done once the config says template and holds no lock."""
    session = requests.Session()
    session.headers['Authorization'] = f'PVEAPIToken={lab.token_id}={lab.token_secret}'
    response = session.post(f'{lab.url}/api2/json/nodes/pve1/lxc/{vmid}/template', verify=lab.cafile, timeout=30)
    assert response.status_code == 200 and response.json()['data'] is None, response.text
    assert wait_until(lambda: lab.call(lambda: bool(lab.pve.ct(vmid).template) and not lab.pve.ct(vmid).lock), timeout=20)


def api_task(lab, method, path, **params):
    """A PVE API request that starts a task, with the lab's token; its final status once the task has ended."""
    session = requests.Session()
    session.headers['Authorization'] = f'PVEAPIToken={lab.token_id}={lab.token_secret}'
    response = session.request(method, f'{lab.url}/api2/json{path}', data=params, verify=lab.cafile, timeout=30)
    assert response.status_code == 200, response.text
    upid = response.json()['data']
    status = {}

    def ended():
        status.update(session.get(f'{lab.url}/api2/json/nodes/pve1/tasks/{upid}/status', verify=lab.cafile, timeout=30).json()['data'])
        return status['status'] == 'stopped'

    assert wait_until(ended, timeout=20), f'task {upid} still running'
    return status


@pytest.mark.lab(time_scale=0.01)
def test_containers_cloned_full_and_linked_from_a_container_template_are_configured_in_the_same_run(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    put_template(lab)
    assert api_task(lab, 'POST', '/nodes/pve1/lxc', vmid=150, hostname='ct-base', ostemplate=TEMPLATE, rootfs='local-lvm:1')['exitstatus'] == 'OK'
    # pve-container src/PVE/API2/LXC.pm template: a stopped container becomes a template, its volumes base-N-disk-M, in a
    # vztemplate task it does not answer (null).
    session = requests.Session()
    session.headers['Authorization'] = f'PVEAPIToken={lab.token_id}={lab.token_secret}'
    assert session.post(f'{lab.url}/api2/json/nodes/pve1/lxc/150/template', verify=lab.cafile, timeout=30).json() == {'data': None}
    assert wait_until(lambda: container(lab, 'ct-base').config.get('template') == 1, timeout=20)
    base = container(lab, 'ct-base')
    assert base.config['template'] == 1 and 'base-150-disk-0' in base.config['rootfs']
    hosts = {
        'ct-copy': {'image': 'ct-base', 'cores': 2, 'ip': 'dhcp', 'disk_size': '6G'},
        'ct-link': {'image': '150', 'linked_clone': True, 'nets': [{'slot': 'net1', 'ip': 'dhcp'}]},
    }
    runs = four_runs(tmp_path, ct_play(), env, cts(hosts))
    copy, link = container(lab, 'ct-copy'), container(lab, 'ct-link')
    result = runs.real.one(TASK, 'ct-copy')
    assert result['vmid'] == copy.vmid != base.vmid
    assert copy.config['cores'] == 2 and 'ip=dhcp' in copy.config['net0'] and copy.config['rootfs'].endswith('size=6G')
    assert f'[puls-owner: puls-managed={copy.vmid}]' in copy.config['description'], 'the record names the clone, not its template'
    clones = {request['hostname']: request['full'] for request in sent(lab, 'POST', '/lxc/150/clone')}
    assert clones == {'ct-copy': '1', 'ct-link': '0'}, 'ct-link is a linked clone'
    assert link.config['net1'].startswith('name=eth1,bridge=vmbr0,') and 'ip=dhcp' in link.config['net1']


@pytest.mark.lab(time_scale=0.01)
def test_a_token_lacking_a_privilege_the_plan_needs_is_refused_before_any_write_and_converges_once_granted_it(lab, tmp_path):
    put_template(lab)
    user, token, secret = 'ct@pve', 'automation', 'c0ffee00-container-privileges'
    grants = {
        '/vms': {'VM.Allocate', 'VM.Audit', 'VM.Config.CPU', 'VM.Config.Disk', 'VM.Config.Network', 'VM.Config.Options', 'VM.PowerMgmt'},
        '/storage': {'Datastore.AllocateSpace', 'Datastore.Audit'},
        '/sdn/zones/localnetwork': {'SDN.Use'},
    }
    env = dict(lab.env, PROXMOX_USER=user, PROXMOX_TOKEN_NAME=token, PROXMOX_TOKEN_SECRET=secret, XDG_CACHE_HOME=str(tmp_path / 'cache'))
    hosts = cts({'ct-lp': {'image': TEMPLATE, 'storage': 'local-lvm', 'cores': 1, 'memory': 256, 'ip': f'{lab.address(30)}/24', 'state': 'started'}})
    lab.call(lambda: lab.pve.add_api_token(user, token, secret, grants))
    refused = run_playbook(tmp_path, ct_play(), env, hosts, name='refused')
    message = refused.one(TASK, 'ct-lp')['msg']
    assert refused.rc != 0 and 'VM.Config.Memory' in message and 'refused before any change' in message, message
    assert lab.writes() == [] and all_cts(lab) == {}

    lab.call(lambda: lab.pve.add_api_token(user, token, secret, dict(grants, **{'/vms': grants['/vms'] | {'VM.Config.Memory'}})))
    granted = run_playbook(tmp_path, ct_play(), env, hosts, name='granted')
    assert granted.rc == 0, granted.stdout
    assert container(lab, 'ct-lp').status == 'running'


@pytest.mark.lab(time_scale=0.01)
def test_a_container_with_two_nics_is_created_and_drift_on_the_second_is_corrected_leaving_everything_else(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    declared = {'ip': f'{lab.address(24)}/24', 'nets': [{'slot': 'net1', 'bridge': 'vmbr0', 'vlan': 30, 'ip': f'{lab.address(25)}/24', 'mtu': 1400}]}
    ct = create_running(lab, tmp_path, env, 'ct-nics', **declared)
    assert ct.config['net1'].startswith('name=eth1,') and 'tag=30' in ct.config['net1'] and 'mtu=1400' in ct.config['net1']
    mac = next(part for part in ct.config['net1'].split(',') if part.startswith('hwaddr='))
    drifted = ct.config['net1'].replace('tag=30', 'tag=31').replace('mtu=1400', 'mtu=1300') + ',rate=5'
    lab.call(lambda: ct.config.update(net1=drifted))
    untouched = {key: value for key, value in all_cts(lab)[ct.vmid].items() if key != 'net1'}

    runs = four_runs(tmp_path, ct_play(), env, cts({'ct-nics': declared}))
    result = runs.real.one(TASK, 'ct-nics')
    assert result['changes'] == ['net1'] and result['reboot_required'] == []
    assert result['diff']['before']['net1'] == {'bridge': 'vmbr0', 'tag': '31', 'ip': f'{lab.address(25)}/24', 'mtu': '1300'}
    assert result['diff']['after']['net1'] == {'bridge': 'vmbr0', 'tag': '30', 'ip': f'{lab.address(25)}/24', 'mtu': '1400'}
    config = all_cts(lab)[ct.vmid]
    assert {key: value for key, value in config.items() if key != 'net1'} == untouched, 'nothing but net1 was written'
    assert mac in config['net1'] and 'tag=30' in config['net1'] and 'mtu=1400' in config['net1'] and 'rate=5' in config['net1'], 'undeclared rate kept'


@pytest.mark.lab(time_scale=0.01)
def test_a_linked_clone_of_a_template_on_a_directory_storage_is_refused_up_front_naming_linked_clone(lab, tmp_path):
    """pve-container src/PVE/API2/LXC.pm clone_vm: "Linked clone feature for 'VOLID' is not available" on a directory
    storage (pve-storage src/PVE/Storage/Plugin.pm volume_has_feature)."""
    env = vm_env(lab, tmp_path)
    put_template(lab)
    lab.call(lambda: lab.pve.storages.update(ctdir={'type': 'dir', 'active': 1, 'content': 'rootdir', 'files': set(), 'path': '/mnt/ctdir'}))
    assert api_task(lab, 'POST', '/nodes/pve1/lxc', vmid=150, hostname='ct-base', ostemplate=TEMPLATE, rootfs='ctdir:1')['exitstatus'] == 'OK'
    convert(lab, 150)
    writes = len(lab.writes())
    for check in (True, False):
        refused = run_playbook(tmp_path, ct_play(), env, cts({'ct-link': {'image': 'ct-base', 'linked_clone': True}}), check=check, name=f'linked-{check}')
        failure = refused.one(TASK, 'ct-link')
        assert refused.rc != 0 and failure['option'] == 'linked_clone', failure['msg']
        assert "keeps rootfs on storage 'ctdir' (dir), where PVE makes no linked clone" in failure['msg'] and 'linked_clone: false' in failure['msg']
    assert len(lab.writes()) == writes and set(all_cts(lab)) == {150}, 'nothing was sent'
    full = run_playbook(tmp_path, ct_play(), env, cts({'ct-link': {'image': 'ct-base'}}), name='full')
    assert full.rc == 0 and container(lab, 'ct-link').config['rootfs'].startswith('ctdir:'), full.stdout


def test_a_tag_the_datacenters_settings_do_not_allow_is_refused_before_any_write_in_check_mode_and_run(lab, tmp_path):
    # pve-container src/PVE/LXC.pm check_ct_modify_config_perm: assert_tag_permissions for the create's tags (none
    # old); with user-tag-access `list`, a tag not listed needs Sys.Modify on /, which the token lacks; it holds
    # Sys.Audit on /, so it sees those settings (pve-manager PVE/API2/Cluster.pm get_options).
    put_template(lab)
    user, token, secret = 'ct@pve', 'automation', 'c0ffee00-container-tags'
    grants = {
        '/': {'Sys.Audit'},
        '/vms': {'VM.Allocate', 'VM.Audit', 'VM.Config.CPU', 'VM.Config.Disk', 'VM.Config.Memory', 'VM.Config.Network', 'VM.Config.Options'},
        '/storage': {'Datastore.AllocateSpace', 'Datastore.Audit'},
        '/sdn/zones/localnetwork': {'SDN.Use'},
    }
    env = dict(lab.env, PROXMOX_USER=user, PROXMOX_TOKEN_NAME=token, PROXMOX_TOKEN_SECRET=secret, XDG_CACHE_HOME=str(tmp_path / 'cache'))
    lab.call(lambda: lab.pve.add_api_token(user, token, secret, grants))
    lab.call(lambda: lab.pve.datacenter.update({'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web']}}))
    hosts = cts({'ct-tags': {'image': TEMPLATE, 'storage': 'local-lvm', 'tags': ['web']}})
    for check in (True, False):
        refused = run_playbook(tmp_path, ct_play(), env, hosts, check=check, name=f'refused-{check}')
        message = refused.one(TASK, 'ct-tags')['msg']
        assert refused.rc != 0 and 'refused before any change' in message, message
        assert 'Permission check failed (/, Sys.Modify) to set the tag puls-managed' in message and 'the tag web' not in message, message
    assert lab.writes() == [] and all_cts(lab) == {}

    # Listed, the owner tag needs nothing more: the container is made, with no old tag to change (unlike a VM's create).
    lab.call(lambda: lab.pve.datacenter.update({'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['puls-managed', 'web']}}))
    made = run_playbook(tmp_path, ct_play(), env, hosts, name='made')
    assert made.rc == 0, made.stdout
    assert container(lab, 'ct-tags').config['tags'] == 'puls-managed;web'


def test_under_a_case_sensitive_tag_style_a_containers_declared_tags_keep_their_spelling_in_four_runs(lab, tmp_path):
    # pve-container src/PVE/LXC/Config.pm update_pct_config: get_unique_tags keeps a tag's case when the datacenter's
    # tag-style says so; by default it lower-cases them, and the declared ones compare as the cluster stores them.
    put_template(lab)
    lab.call(lambda: lab.pve.datacenter.update({'tag-style': {'case-sensitive': 1}}))
    runs = four_runs(tmp_path, ct_play(), vm_env(lab, tmp_path), cts({'ct-cs': {'image': TEMPLATE, 'storage': 'local-lvm', 'tags': ['Web', 'DB']}}))
    assert container(lab, 'ct-cs').config['tags'] == 'DB;Web;puls-managed'
    assert runs.real.one(TASK, 'ct-cs')['diff']['after']['tags'] == ['DB', 'Web', 'puls-managed']
    lab.call(lambda: lab.pve.datacenter.pop('tag-style'))
    four_runs(tmp_path, ct_play(), vm_env(lab, tmp_path), cts({'ct-cs': {'tags': ['Web', 'DB', 'Prod']}}))
    assert container(lab, 'ct-cs').config['tags'] == 'db;prod;puls-managed;web'
