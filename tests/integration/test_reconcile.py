# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""puls.proxmox.site and puls.proxmox.destroy (the reconcile role's main and destroy entry points) against the lab,
run with the real ansible-playbook on inventories written per test. VMs are clones of the lab's template 9017."""

from __future__ import annotations

import concurrent.futures
import sys
import textwrap
from urllib.parse import parse_qsl

import lab_vms
import pytest
from lab import images

from playbooks import REPO, run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'
DESTROY = '- import_playbook: puls.proxmox.destroy\n'
TEMPLATE = 9017


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def fleet(lab, tmp_path, vms, **cluster):
    """An inventory of the pve_vms group: vms is name -> variables; cluster-level variables go to all."""
    key, public = (
        lab_vms.ssh_key(tmp_path) if not (tmp_path / 'id_ed25519').exists() else (tmp_path / 'id_ed25519', (tmp_path / 'id_ed25519.pub').read_text().strip())
    )
    common = {
        'pve_ssh_user': 'alice',
        'pve_ssh_keys': [public],
        'pve_ssh_private_key_file': str(key),
        'pve_guest_python': sys.executable,
        'pve_provision_dir': str(tmp_path),
        'pve_nodes': lab.nodes,
    }
    common.update(cluster)
    return {'all': {'vars': common, 'children': {'pve_templates': {'hosts': {}}, 'pve_vms': {'hosts': vms}}}}


def site(lab, tmp_path, inventory, name, check=False, plays=SITE, extra=()):
    return run_playbook(tmp_path, plays, lab.env, inventory=inventory, check=check, name=name, extra_args=extra)


def ok(run):
    assert run.rc == 0, run.stdout + run.stderr
    return run


def vms(api):
    """name -> (vmid, config) of every VM but the template."""
    return {entry['name']: (int(entry['vmid']), api.vm_config(entry['node'], entry['vmid'])) for entry in api.cluster_vms() if int(entry['vmid']) != TEMPLATE}


def marks(lab, vmid):
    path = lab.guest(vmid).home / 'marks'
    return path.read_text().splitlines() if path.exists() else []


def test_check_predicts_the_first_run_which_converges_and_the_second_run_changes_nothing(lab, tmp_path):
    api = lab_vms.client(lab)
    write(
        tmp_path / 'mark.yml',
        '''\
        - name: Mark the machine
          hosts: all
          gather_facts: false
          tasks:
            - name: Leave a mark
              ansible.builtin.shell: echo "marked by {{ inventory_hostname }}" >> "$HOME/marks"
              changed_when: true
        ''',
    )
    lab.dns.set('web2', lab.address(2))
    url, sums = lab.serve('tools.iso', images.iso('TOOLS', {'tools.txt': b'tools\n'}))
    inventory = fleet(
        lab,
        tmp_path,
        {
            'web1': {
                'pve_image': str(TEMPLATE),
                'pve_ip': f'{lab.address(1)}/24',
                'pve_gateway': lab.gateway,
                'pve_cores': 2,
                'pve_tags': ['web'],
                'pve_provision': ['mark.yml'],
            },
            'web2': {'pve_image': 'ubuntu-24.04-cloud', 'pve_memory': 1024, 'pve_tags': ['web']},
        },
        pve_isos=[{'filename': 'tools.iso', 'node': 'pve1', 'url': url, 'checksum': 'sha256:' + sums['sha256']}],
    )

    planned = ok(site(lab, tmp_path, inventory, 'plan', check=True))
    assert lab.writes() == []
    assert planned.plans == {'tools.iso': ['create'], 'web1': ['create', 'provision mark.yml'], 'web2': ['create']}

    applied = ok(site(lab, tmp_path, inventory, 'apply'))
    assert applied.plans == planned.plans
    machines = vms(api)
    assert set(machines) == {'web1', 'web2'}
    web1, web2 = machines['web1'], machines['web2']
    assert web1[1]['cores'] == 2 and 'puls-managed' in web1[1]['tags']
    assert web2[1]['ipconfig0'].startswith(f'ip={lab.address(2)}/')
    assert marks(lab, web1[0]) == ['marked by web1']

    connections = lab.ssh_connections()
    writes = len(lab.writes())
    # A later play of the user's own playbook reaches the machines by name.
    then = SITE + '- {name: Later play, hosts: pve_vms, gather_facts: false, tasks: [{name: Address, ansible.builtin.debug: {var: ansible_host}}]}\n'
    again = ok(site(lab, tmp_path, inventory, 'again', plays=then))
    assert not again.changed, again.stdout
    assert [again.one('Address', host)['ansible_host'] for host in ('web1', 'web2')] == [lab.address(1), lab.address(2)]
    assert again.plans == {'tools.iso': ['ok'], 'web1': ['ok'], 'web2': ['ok']}
    assert (lab.ssh_connections(), len(lab.writes())) == (connections, writes)


def test_drift_behind_the_collections_back_is_restored_and_a_foreign_vm_with_a_declared_name_is_never_touched(lab, tmp_path):
    api = lab_vms.client(lab)
    write(tmp_path / 'mark.sh', 'echo marked >> "$HOME/marks"\n')
    lab_vms.clone(api, 180, 'foreign1', description='made by hand')
    inventory = fleet(
        lab,
        tmp_path,
        {
            'web1': {
                'pve_image': str(TEMPLATE),
                'pve_ip': f'{lab.address(1)}/24',
                'pve_gateway': lab.gateway,
                'pve_cores': 2,
                'pve_tags': ['web', 'blue'],
                'pve_provision': ['mark.sh'],
            }
        },
    )
    ok(site(lab, tmp_path, inventory, 'first'))
    vmid, config = vms(api)['web1']
    path = f'/nodes/pve1/qemu/{vmid}'
    notes = 'Owner: ops\n\n' + config['description']
    api.post(path + '/config', cores=4, tags='puls-managed;web', description=notes)
    api.run_task('POST', path + '/status/stop')

    # A declared name that a foreign VM holds stops the whole run before any change, saying how to adopt it.
    hosts = inventory['all']['children']['pve_vms']['hosts']
    hosts['foreign1'] = {'pve_image': str(TEMPLATE), 'pve_cores': 8}
    before = len(lab.writes())
    refused = site(lab, tmp_path, inventory, 'refused')
    assert refused.rc != 0
    assert (
        'foreign1: VM 180 (foreign1 on pve1) lacks the owner tag puls-managed, so this collection did not create it; '
        'to take it over set pve_adopt: true for foreign1'
    ) in refused.stdout, refused.stdout
    assert lab.writes()[before:] == [] and api.vm_config('pve1', 180)['cores'] != 8

    del hosts['foreign1']
    restored = ok(site(lab, tmp_path, inventory, 'restore'))
    assert restored.plans == {'web1': ['update']}
    config = api.vm_config('pve1', vmid)
    assert (config['cores'], sorted(config['tags'].split(';'))) == (2, ['blue', 'puls-managed', 'web'])
    assert api.get(path + '/status/current')['status'] == 'running'
    assert config['description'] == notes
    assert marks(lab, vmid) == ['marked']


def test_replace_keeps_the_old_vm_until_the_new_one_is_provisioned_then_prune_and_destroy(lab, tmp_path):
    api = lab_vms.client(lab)
    write(tmp_path / 'app.sh', 'echo broken; exit 4\n')
    base = {'pve_image': str(TEMPLATE), 'pve_power': 'stopped'}
    inventory = fleet(lab, tmp_path, {'old1': dict(base), 'stray1': dict(base), 'kept1': dict(base, pve_protected=True)})
    ok(site(lab, tmp_path, inventory, 'olds'))
    old1 = vms(api)['old1'][0]

    inventory = fleet(
        lab,
        tmp_path,
        {
            'new1': {
                'pve_image': str(TEMPLATE),
                'pve_ip': f'{lab.address(3)}/24',
                'pve_gateway': lab.gateway,
                'pve_replace': 'old1',
                'pve_provision': ['app.sh'],
            }
        },
    )
    failed = site(lab, tmp_path, inventory, 'replace-broken')
    assert failed.rc != 0 and 'app.sh failed on' in failed.stdout
    assert {'old1', 'new1', 'stray1', 'kept1'} <= set(vms(api))

    write(tmp_path / 'app.sh', 'echo app >> "$HOME/marks"\n')
    replaced = ok(site(lab, tmp_path, inventory, 'replace'))
    # With pruning off, the owned guests no longer declared are orphans: listed, and left alone.
    assert replaced.plans == {'new1': ['provision app.sh', 'replace old1'], 'stray1': ['orphan'], 'kept1': ['orphan']}
    assert set(vms(api)) == {'new1', 'stray1', 'kept1'}
    assert old1 not in [vmid for vmid, _config in vms(api).values()]

    inventory['all']['vars']['pve_prune'] = True
    planned = ok(site(lab, tmp_path, inventory, 'prune-plan', check=True))
    # Prune never takes a protected guest: it stays an orphan.
    assert planned.plans == {'new1': ['ok'], 'stray1': ['prune'], 'kept1': ['orphan']}
    pruned = ok(site(lab, tmp_path, inventory, 'prune'))
    assert pruned.plans == planned.plans
    assert set(vms(api)) == {'new1', 'kept1'}

    inventory['all']['children']['pve_vms']['hosts']['kept1'] = dict(base, pve_protected=True)
    destroyed = ok(run_playbook(tmp_path, DESTROY, lab.env, inventory=inventory, name='destroy'))
    assert destroyed.plans == {'new1': ['destroy'], 'kept1': ['ok']}
    assert set(vms(api)) == {'kept1'}


def test_bad_input_fails_every_host_before_any_write(lab, tmp_path):
    api = lab_vms.client(lab)
    lab_vms.clone(api, 190, 'locked1', tags='puls-managed', protection=1)
    lab_vms.clone(api, 191, 'handmade1')
    setup = len(lab.writes())
    good = {'pve_image': str(TEMPLATE), 'pve_power': 'stopped'}
    cases = {
        # web3 is a VM: the bake's own variables are checked for every machine, before any change.
        'types': (
            {
                'web1': good,
                'web2': dict(good, pve_cores='many', pve_power='paused'),
                'web3': dict(good, pve_keep_failed_build='maybe', pve_template_wait_timeout='soon'),
            },
            ['web2', 'pve_cores', 'pve_power', 'web3', 'pve_keep_failed_build', 'pve_template_wait_timeout'],
        ),
        'fleet': (
            {
                'web1': dict(good, pve_vmid=500, pve_ip=f'{lab.address(1)}/24', pve_replace='web3'),
                'web2': dict(good, pve_vmid=500, pve_ip=lab.address(1), pve_replace='locked1'),
                'web3': dict(good, pve_image='no-such-template', pve_replace='handmade1'),
            },
            [
                'web1 and web2 declare the same pve_vmid 500',
                f'web1 and web2 declare the same address {lab.address(1)}',
                'web1: pve_replace is web3, which is declared in this inventory',
                'web2: pve_replace is locked1, which is protected',
                'web3: pve_replace is handmade1, which lacks the owner tag',
                'web3: pve_image is no-such-template, which is neither a template declared',
            ],
        ),
    }
    for name, (hosts, messages) in cases.items():
        # The playbook as a file, as a project that copies it would run it.
        run = site(lab, tmp_path, fleet(lab, tmp_path, hosts), name, plays=f'- import_playbook: {REPO}/playbooks/site.yml\n')
        assert run.rc != 0
        for message in messages:
            assert message in run.stdout, run.stdout
        assert not run.for_task('puls.proxmox.reconcile : Create or converge the VM')
        if name == 'types':
            # Each invalid host has a failure of its own, which names its variables.
            [validation] = run.for_task("puls.proxmox.reconcile : Stop when a machine's variables are invalid")
            refused = {item['reconcile_invalid']['key']: item['msg'] for item in validation['result']['results']}
            assert set(refused) == {'web2', 'web3'}, refused
            assert 'pve_cores' in refused['web2'] and 'pve_power' in refused['web2']
            assert 'pve_keep_failed_build' in refused['web3'] and 'pve_template_wait_timeout' in refused['web3']
    # A value of the command line is validated as the inventory's are, for every host it reaches.
    run = site(lab, tmp_path, fleet(lab, tmp_path, {'web1': good, 'web2': good}), 'extra', extra=('-e', 'pve_memory=lots'))
    assert run.rc != 0
    [validation] = run.for_task("puls.proxmox.reconcile : Stop when a machine's variables are invalid")
    refused = {item['reconcile_invalid']['key']: item['msg'] for item in validation['result']['results']}
    assert set(refused) == {'web1', 'web2'} and all('pve_memory' in message for message in refused.values()), refused
    assert len(lab.writes()) == setup


@pytest.mark.lab(time_scale=0.05, clone_secs=5)
def test_two_runs_at_once_on_disjoint_limits_converge_without_duplicates(lab, tmp_path):
    api = lab_vms.client(lab)
    names = ['app1', 'app2', 'app3', 'app4']
    inventory = fleet(lab, tmp_path, {name: {'pve_image': str(TEMPLATE), 'pve_power': 'stopped', 'pve_cores': 1} for name in names})
    site(lab, tmp_path, inventory, 'inventory-only', extra=('--list-hosts',))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda limit: site(lab, tmp_path, None, 'slice-' + limit.replace(',', '-'), extra=('--limit', limit)), ['app1,app2', 'app3,app4']))
    for run in runs:
        ok(run)
    guests = [entry['name'] for entry in api.cluster_vms() if int(entry['vmid']) != TEMPLATE]
    assert sorted(guests) == names


@pytest.mark.lab(time_scale=0.05, clone_secs=40)
def test_new_vms_are_cloned_at_most_pve_clone_concurrency_at_a_time_while_one_that_exists_is_converged(lab, tmp_path):
    """Five VMs to create under pve_clone_concurrency 2 and Ansible's 5 forks, beside one that exists and is to be
    converged, all in the same task. The clones in flight are read off the order of the API requests, not off a
    clock: a clone runs from its POST until the first request naming its new VMID, which pve_vm makes once the
    clone's task ended. Two at once, not one after the other: the VMs' tasks run in parallel."""
    api = lab_vms.client(lab)
    declared = {'pve_image': str(TEMPLATE), 'pve_power': 'stopped', 'pve_cores': 1}
    ok(site(lab, tmp_path, fleet(lab, tmp_path, {'old1': dict(declared)}), 'first'))
    names = ['new1', 'new2', 'new3', 'new4', 'new5']
    inventory = fleet(lab, tmp_path, {'old1': dict(declared, pve_cores=2), **{name: dict(declared) for name in names}}, pve_clone_concurrency=2)
    before = len(lab.requests())
    run = ok(site(lab, tmp_path, inventory, 'second'))

    in_flight, most = set(), 0
    for request in lab.requests()[before:]:
        vmid = next((part for part in request.path.split('/') if part.isdigit()), None)
        in_flight.discard(vmid)
        if request.method == 'POST' and request.path.endswith(f'/qemu/{TEMPLATE}/clone'):
            in_flight.add(dict(parse_qsl(request.body))['newid'])
            most = max(most, len(in_flight))
    assert most == 2, most
    made = vms(api)
    assert sorted(made) == sorted(['old1', *names]) and made['old1'][1]['cores'] == 2
    assert len(run.for_task('puls.proxmox.reconcile : Create or converge the VM')) == 6


def test_a_guest_cloned_by_hand_from_an_owned_template_is_neither_adopted_silently_nor_pruned(lab, tmp_path):
    # qemu-server Qemu.pm clone_vm copies tags and Notes: a hand clone carries the owner tag and the template's owner
    # record, which names the template's VMID, not the clone's.
    api = lab_vms.client(lab)
    lab_vms.clone(api, 121, 'team-golden', **lab_vms.owned(121, notes='Golden image of team A'), protection=1)
    api.run_task('POST', '/nodes/pve1/qemu/121/template')
    for vmid, name in ((122, 'handmade1'), (123, 'web2')):
        api.wait_task(api.create_vm('/nodes/pve1/qemu/121/clone', vmid, name=name, full=1), 60)
    assert 'puls-managed' in api.vm_config('pve1', 122)['tags']
    lab_vms.clone(api, 124, 'old1', tags='puls-managed')  # as a release before the owner record tagged its VMs

    # Prune on: only what the collection made and no longer declares goes; the hand clone and the legacy VM stay.
    inventory = fleet(lab, tmp_path, {'web1': {'pve_image': 'team-golden', 'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway}}, pve_prune=True)
    pruned = ok(site(lab, tmp_path, inventory, 'prune'))
    names = {entry['name'] for entry in api.cluster_vms()}
    assert {'team-golden', 'handmade1', 'web2', 'old1', 'web1'} <= names
    # Said as a warning of the run, which callbacks count.
    warned = [warning for record in pruned.results for warning in record['result'].get('warnings') or ()]
    assert [warning for warning in warned if 'old1' in warning and 'no owner record' in warning], warned

    # Declared under its name, the hand clone is refused before any write, and the message says how to take it over.
    inventory['all']['children']['pve_vms']['hosts']['web2'] = {'pve_image': 'team-golden', 'pve_cores': 4}
    before = len(lab.writes())
    refused = site(lab, tmp_path, inventory, 'refused')
    assert refused.rc != 0
    message = ' '.join(str(record['result'].get('msg')) for record in refused.failed if record['host'] == 'web2')
    assert 'adopt' in message and '121' in message, message
    assert not [write for write in lab.writes()[before:] if '/qemu/123' in write.path]
    assert api.vm_config('pve1', 123)['cores'] != 4


def test_the_provision_files_of_a_vm_are_hashed_once_in_a_run(lab, tmp_path):
    # An include the hash cannot follow makes each hashing of the file warn: the pre-flight's pass hashes it, and the
    # provisioning chain reuses its hashes.
    write(
        tmp_path / 'app.yml',
        '''\
        - hosts: all
          gather_facts: false
          tasks:
            - ansible.builtin.include_tasks: "{{ flavour }}.yml"
        ''',
    )
    inventory = fleet(
        lab, tmp_path, {'web1': {'pve_image': str(TEMPLATE), 'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway, 'pve_provision': ['app.yml']}}
    )
    planned = ok(site(lab, tmp_path, inventory, 'check', check=True))
    assert planned.plans == {'web1': ['create', 'provision app.yml']}
    assert planned.stderr.count('the hash of app.yml does not cover') == 1, planned.stderr
