# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_template through real ansible-playbook runs against the lab: conversion of running build VMs (with and
without a previous template, used by linked clones or not), the current/reason query, retirement and removal in
four runs, refusals before any write, and the module's EXAMPLES.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_template.py -n 2
"""

from __future__ import annotations

import re
from pathlib import Path

import lab_vms
import yaml
from pve_vm_plays import sent

from ansible_collections.puls.proxmox.plugins.module_utils import _notes, _template_plan
from ansible_collections.puls.proxmox.plugins.module_utils._cidata import build_seed_iso, nocloud_seed
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import list_volumes, upload_volume
from playbooks import four_runs, run_playbook

MODULE = Path(__file__).resolve().parents[2] / 'plugins' / 'modules' / 'pve_template.py'
NODE = 'pve1'
PASSWORD = 'build-only-Pa55'
SPEC = {'image': 'ubuntu-24.04-cloud', 'cores': 2, 'memory': 2048}
HASHES = {'playbooks/base.yml': '3f2a9c1b7d4e', 'playbooks/web.yml': '0c1d2e3f4a5b'}
OPTIONS = ('name', 'vmid', 'state', 'spec', 'provision_hashes', 'owner_tag', 'shutdown_timeout')
IMPORTED = 'local:import/noble.qcow2'
LOCALHOST = {'all': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}


def template_play(*tasks):
    """One pve_template task per inventory host, its options from the host's `tpl`; or the given tasks on localhost."""
    if tasks:
        return [{'name': 'Templates', 'hosts': 'localhost', 'gather_facts': False, 'tasks': list(tasks)}]
    args = {option: '{{ tpl.%s | default(omit) }}' % option for option in OPTIONS}
    return [{'name': 'Templates', 'hosts': 'all', 'gather_facts': False, 'tasks': [{'name': 'pve_template', 'puls.proxmox.pve_template': args}]}]


def task(title, **options):
    return {'name': title, 'puls.proxmox.pve_template': options, 'ignore_errors': True}


def build_vm(lab, api, vmid, name, address, key):
    """A running build VM, as the bake leaves it: a clone of 9017 tagged puls-building, with build-time cloud-init."""
    return lab_vms.boot(
        lab,
        api,
        vmid,
        name,
        lab.address(address),
        key,
        tags='puls-building',
        cipassword=PASSWORD,
        nameserver='127.0.0.53',
        searchdomain='lab.test',
        description='Web tier golden image',
    )


def seed_build_vm(api, vmid, name):
    """A stopped build VM made with user_data, as pve_vm makes it: its own NoCloud seed ISO in place of the cloud-init
    drive. Returns the ISO's volume ID."""
    lab_vms.clone(api, vmid, name, tags='puls-building')
    seed = nocloud_seed(user_data='#cloud-config\npackage_upgrade: true\n', local_hostname=name)
    volid = upload_volume(api, NODE, 'local', 'puls-seed-%s-%s.iso' % (name, seed.content_hash), build_seed_iso(seed).data, 'iso')
    api.put('/nodes/%s/qemu/%d/config' % (NODE, vmid), ide2=volid + ',media=cdrom')
    return volid


def template(api, vmid, name, source=lab_vms.TEMPLATE, full=1, **config):
    """A template made straight through the API: a clone of source, configured, converted, with the template block
    pve_template's conversion records (a clone inherits it with the Notes: how LVM-thin clones are told)."""
    config.setdefault('description', '[puls-template: spec=%012x]' % vmid)
    upid = api.create_vm('/nodes/%s/qemu/%d/clone' % (NODE, source), vmid, name=name, full=full)
    api.wait_task(upid, 60)
    api.put('/nodes/%s/qemu/%d/config' % (NODE, vmid), tags='puls-managed', **config)
    api.run_task('POST', '/nodes/%s/qemu/%d/template' % (NODE, vmid))


def linked_clone(api, vmid, name, source):
    api.wait_task(api.create_vm('/nodes/%s/qemu/%d/clone' % (NODE, source), vmid, name=name, full=0), 60)


def config(api, vmid):
    return api.vm_config(NODE, vmid)


def guests(lab):
    return lab.call(lambda: {vm.vmid: vm.config.get('name') for vm in lab.pve.vms})


def test_conversion_shuts_down_gracefully_strips_build_settings_and_replaces_the_previous_template(lab, tmp_path):
    api = lab_vms.client(lab)
    _private, key = lab_vms.ssh_key(tmp_path)
    for vmid, name, address in ((120, 'web-build', 1), (121, 'db-build', 2), (122, 'app-build', 3)):
        build_vm(lab, api, vmid, name, address, key)
    seed = seed_build_vm(api, 123, 'seed-build')
    template(api, 200, 'db-golden')  # replaced: no clone uses it
    template(api, 201, 'app-golden')  # replaced, but linked clone 210 uses it
    linked_clone(api, 210, 'app1', 201)
    hosts = {'web-golden': {'vmid': 120}, 'db-golden': {'vmid': 121}, 'app-golden': {'vmid': 122, 'shutdown_timeout': 30}, 'seed-golden': {'vmid': 123}}
    for host, tpl in hosts.items():
        tpl.update(name=host, state='converted', spec=SPEC, provision_hashes=HASHES)

    runs = four_runs(
        tmp_path, template_play(), lab.env, {'all': {'vars': {'ansible_connection': 'local'}, 'hosts': {host: {'tpl': tpl} for host, tpl in hosts.items()}}}
    )

    web = config(api, 120)
    assert (web['name'], web['template']) == ('web-golden', 1)
    assert not set(web) & {'ciuser', 'cipassword', 'sshkeys', 'ipconfig0', 'nameserver', 'searchdomain'}
    assert set(web['tags'].split(';')) == {'puls-managed'}
    # The cloud-init drive stays, regenerated: it holds none of the build settings any more.
    assert web['ide2'].startswith('local-lvm:vm-120-cloudinit') and lab.call(lambda: lab.pve.cloudinit_regenerated(120))
    assert api.get('/nodes/%s/qemu/120/cloudinit' % NODE) == []
    lines = web['description'].splitlines()
    assert lines[0] == 'Web tier golden image'
    assert _notes.parse(web['description']).entries == HASHES
    spec_hash = runs.real.one('pve_template', 'web-golden')['spec_hash']
    assert _template_plan.recorded_entries(web['description'])['spec'] == spec_hash and len(spec_hash) == 12
    for vmid in (120, 121, 122):
        assert sent(lab, 'POST', '/qemu/%d/status/shutdown' % vmid)[0]['forceStop'] == '1'
        assert not sent(lab, 'POST', '/qemu/%d/status/stop' % vmid)
    assert sent(lab, 'POST', '/qemu/122/status/shutdown')[0]['timeout'] == '30'

    diff = runs.real.one('pve_template', 'web-golden')['diff']
    assert (diff['before']['status'], diff['after']['status'], diff['before']['template'], diff['after']['template']) == ('running', 'stopped', False, True)
    assert (diff['before']['ciuser'], diff['after']['ciuser'], diff['before']['cipassword']) == ('alice', None, '********')
    assert diff['before']['sshkeys'] == [key] and diff['after']['notes'] == web['description']
    assert PASSWORD not in runs.real.stdout + runs.check.stdout + str(runs.real.results)

    # Blue/green: the unused previous template is gone, the one a linked clone uses is kept retired.
    names = guests(lab)
    assert 200 not in names and names[121] == 'db-golden'
    db = runs.real.one('pve_template', 'db-golden')
    assert db['previous'] == {'vmid': 200, 'name': db['diff']['after']['previous']['name'], 'action': 'destroyed', 'linked_clones': []}
    app = runs.real.one('pve_template', 'app-golden')['previous']
    assert (app['action'], app['linked_clones']) == ('retired', ['app1 (210)'])
    assert re.fullmatch(r'app-golden-[0-9a-f]{8}', names[201]) and names[122] == 'app-golden'
    assert set(config(api, 201)['tags'].split(';')) == {'puls-managed', 'puls-retired'}
    # The clone still works: it starts from the retired template's base.
    api.run_task('POST', '/nodes/%s/qemu/210/status/start' % NODE)
    assert api.get('/nodes/%s/qemu/210/status/current' % NODE)['status'] == 'running'
    # A thin snapshot of the retired template's base (on LVM-thin only the lab knows its origin).
    volume = config(api, 210)['scsi0'].split(',')[0]
    assert lab.call(lambda: lab.pve.linked_base(volume)) == '201/base-201-disk-0'

    # The build's user-data went with its seed ISO: an empty cloud-init drive took the ISO's slot.
    made = config(api, 123)
    assert made['ide2'].startswith('local-lvm:vm-123-cloudinit') and seed not in str(made)
    assert seed not in list_volumes(api, NODE, 'local', 'iso') and api.get('/nodes/%s/qemu/123/cloudinit' % NODE) == []
    diff = runs.real.one('pve_template', 'seed-golden')['diff']
    assert (diff['before']['user_data'], diff['after']['user_data']) == (seed, None)
    assert (diff['before']['cloudinit_drive'], diff['after']['cloudinit_drive']) == (None, 'ide2: local-lvm:cloudinit')


def test_present_says_whether_a_template_is_current_and_why_not(lab, tmp_path):
    api = lab_vms.client(lab)
    _private, key = lab_vms.ssh_key(tmp_path)
    build_vm(lab, api, 120, 'web-build', 1, key)
    template(api, 9018, 'ubuntu-24.04-next')
    api.put('/nodes/%s/config' % NODE, description='[puls-files: %s=aaaaaaaaaaaa]' % IMPORTED)
    made = run_playbook(
        tmp_path,
        template_play(task('Convert', name='web-golden', vmid=120, state='converted', spec=SPEC, provision_hashes=HASHES)),
        lab.env,
        inventory=LOCALHOST,
        name='convert',
    )
    assert made.rc == 0 and made.one('Convert')['changed'], made.stdout
    changed_playbook = dict(HASHES, **{'playbooks/web.yml': 'ffffffffffff'})

    lab_vms.clone(api, 121, 'web-golden-build', tags='puls-building')  # another run's build in progress
    # The query changes nothing, in check mode or not, run after run.
    runs = four_runs(
        tmp_path,
        template_play(
            task('Same', name='web-golden', spec=SPEC, provision_hashes=HASHES),
            task('Changed playbook', name='web-golden', spec=SPEC, provision_hashes=changed_playbook),
        ),
        lab.env,
        inventory=LOCALHOST,
    )
    assert not runs.real.failed and not any(run.changed for run in (runs.check, runs.real)), runs.real.stdout
    others = run_playbook(
        tmp_path,
        template_play(
            task('Same image by VMID', name='web-golden', spec=dict(SPEC, image='9017'), provision_hashes=HASHES),
            task('More cores', name='web-golden', spec=dict(SPEC, cores=4), provision_hashes=HASHES),
            task('New base', name='web-golden', spec=dict(SPEC, image='ubuntu-24.04-next'), provision_hashes=HASHES),
            task('Missing', name='nope', spec=SPEC),
            task('Not ours', name='ubuntu-24.04-cloud', spec=dict(SPEC, image='ubuntu-24.04-next')),
            task('Imported base', name='nope', spec=dict(SPEC, image=IMPORTED)),
        ),
        lab.env,
        inventory=LOCALHOST,
        name='queries',
    )
    assert not others.failed, others.stdout
    # A new download of the imported image (pve_iso records its source in the node's notes) changes the spec hash.
    api.put('/nodes/%s/config' % NODE, description='[puls-files: %s=bbbbbbbbbbbb]' % IMPORTED)
    again = run_playbook(
        tmp_path, template_play(task('Imported base', name='nope', spec=dict(SPEC, image=IMPORTED))), lab.env, inventory=LOCALHOST, name='reimported'
    )
    assert again.one('Imported base')['spec_hash'] != others.one('Imported base')['spec_hash']

    results = {title: runs.real.one(title) for title in ('Same', 'Changed playbook')}
    results.update((title, others.one(title)) for title in ('Same image by VMID', 'More cores', 'New base', 'Missing', 'Not ours'))
    assert {title: (result['current'], result['reason']) for title, result in results.items()} == {
        'Same': (True, ''),
        'Changed playbook': (False, 'provision file playbooks/web.yml changed'),
        'Same image by VMID': (True, ''),
        'More cores': (False, 'cores 2 -> 4'),
        'New base': (False, 'base image changed (now template ubuntu-24.04-next (9018 on pve1))'),
        'Missing': (False, 'template nope does not exist'),
        'Not ours': (False, 'it records no spec (it was not made by pve_template)'),
    }
    assert results['Same']['vmid'] == 120 and results['Missing']['vmid'] is None
    assert results['Same']['building'] == {'vmid': 121, 'node': NODE, 'name': 'web-golden-build'} and results['Missing']['building'] is None


def test_retired_keeps_a_used_template_under_another_name_and_absent_destroys_an_unused_one(lab, tmp_path):
    api = lab_vms.client(lab)
    template(api, 200, 'old-golden')
    linked_clone(api, 210, 'app1', 200)
    template(api, 201, 'gone-golden')

    runs = four_runs(
        tmp_path,
        template_play(
            task('Retire', name='old-golden', state='retired'),
            task('Remove', name='gone-golden', state='absent'),
        ),
        lab.env,
        inventory=LOCALHOST,
    )

    retired = runs.real.one('Retire')
    new_name = retired['name']
    assert re.fullmatch(r'old-golden-[0-9a-f]{8}', new_name) and retired['vmid'] == 200
    assert retired['diff'] == {
        'before': {'name': 'old-golden', 'tags': ['puls-managed']},
        'after': {'name': new_name, 'tags': ['puls-managed', 'puls-retired']},
    }
    assert guests(lab)[200] == new_name and config(api, 200)['template'] == 1
    assert runs.real.one('Remove')['diff'] == {'before': {'state': 'present', 'vmid': 201, 'name': 'gone-golden'}, 'after': {'state': 'absent'}}
    assert 201 not in guests(lab)
    assert not [name for name in lab.call(lambda: list(lab.pve.storages['local-lvm']['volumes'])) if '-201-' in name]
    api.run_task('POST', '/nodes/%s/qemu/210/status/start' % NODE)
    assert api.get('/nodes/%s/qemu/210/status/current' % NODE)['status'] == 'running'

    # The retired generation is found by its VMID, and removed once no clone uses it.
    api.run_task('POST', '/nodes/%s/qemu/210/status/stop' % NODE)
    api.run_task('DELETE', '/nodes/%s/qemu/210' % NODE)
    removed = run_playbook(
        tmp_path, template_play(task('Remove retired', name='old-golden', vmid=200, state='absent')), lab.env, inventory=LOCALHOST, name='prune'
    )
    assert removed.rc == 0 and removed.one('Remove retired')['changed'] and 200 not in guests(lab)


def test_refused_input_names_the_option_and_writes_nothing(lab, tmp_path):
    api = lab_vms.client(lab)
    template(api, 200, 'old-golden')
    linked_clone(api, 210, 'app1', 200)
    template(api, 201, 'safe-golden', protection=1)
    template(api, 202, 'twin')
    template(api, 203, 'twin')
    lab_vms.clone(api, 150, 'server', tags='production')
    writes_before = len(lab.writes())

    run = run_playbook(
        tmp_path,
        template_play(
            task('Absent with a linked clone', name='old-golden', state='absent'),
            task('Absent while protected', name='safe-golden', state='absent'),
            task('Convert a server', name='web-golden', vmid=150, state='converted', spec=SPEC),
            task('Convert a template', name='web-golden', vmid=9017, state='converted', spec=SPEC),
            task('Convert a missing VM', name='web-golden', vmid=999, state='converted', spec=SPEC),
            task('Ambiguous name', name='twin', spec=SPEC),
            task('VMID of another template', name='old-golden', vmid=202, state='retired'),
            task('Retire a foreign template', name='ubuntu-24.04-cloud', state='retired'),
            task('Unknown base image', name='old-golden', spec=dict(SPEC, image='debian-13')),
            task('Bad provision hash', name='old-golden', spec=SPEC, provision_hashes={'web.yml': 'NOT-HEX'}),
        ),
        lab.env,
        inventory=LOCALHOST,
        name='refusals',
    )

    refusals = {record['task']: (record['result'].get('option'), record['result']['msg']) for record in run.failed}
    assert refusals == {
        'Absent with a linked clone': (
            'state',
            "state absent refused: linked clones use template 'old-golden' (200 on pve1): app1 "
            '(210); destroy them first, or retire the template (state: retired) to keep it '
            'under another name',
        ),
        'Absent while protected': ('state', refusals['Absent while protected'][1]),
        'Convert a server': ('vmid', refusals['Convert a server'][1]),
        'Convert a template': ('vmid', refusals['Convert a template'][1]),
        'Convert a missing VM': ('vmid', 'vmid 999 does not exist in the cluster: give the VMID of the provisioned build VM to convert'),
        'Ambiguous name': ('name', refusals['Ambiguous name'][1]),
        'VMID of another template': ('vmid', "vmid 202 is template 'twin' (202 on pve1), not 'old-golden'; correct vmid or name"),
        'Retire a foreign template': ('name', refusals['Retire a foreign template'][1]),
        'Unknown base image': ('spec', refusals['Unknown base image'][1]),
        'Bad provision hash': ('provision_hashes', refusals['Bad provision hash'][1]),
    }
    assert 'is protected' in refusals['Absent while protected'][1]
    assert "lacks the tag 'puls-building'" in refusals['Convert a server'][1]
    assert "is already template 'ubuntu-24.04-cloud'" in refusals['Convert a template'][1]
    assert '202 on pve1' in refusals['Ambiguous name'][1] and '203 on pve1' in refusals['Ambiguous name'][1]
    assert "lacks the owner tag 'puls-managed'" in refusals['Retire a foreign template'][1]
    assert "image 'debian-13' matches no template" in refusals['Unknown base image'][1]
    assert "'NOT-HEX'" in refusals['Bad provision hash'][1]
    assert lab.writes()[writes_before:] == []
    assert config(api, 150)['name'] == 'server' and 'template' not in config(api, 150)


def test_examples_run_as_written(lab, tmp_path):
    api = lab_vms.client(lab)
    _private, key = lab_vms.ssh_key(tmp_path)
    build_vm(lab, api, 4711, 'web-build', 1, key)
    # The build container of the container template's example, as the bake leaves it: tagged puls-building, stopped.
    lab.call(lambda: lab.pve.add_ct(4712, 'cache-golden-build', config={'tags': 'puls-building', 'memory': 512}))
    examples = yaml.safe_load(re.search(r"EXAMPLES = r'''(.*?)'''", MODULE.read_text(), re.S).group(1))

    run = run_playbook(tmp_path, template_play(*examples), lab.env, inventory=LOCALHOST)

    assert run.rc == 0, run.stdout
    assert run.one('Say why it must be rebuilt')['msg'] == 'rebuild web-golden: template web-golden does not exist'
    assert run.one('Turn the provisioned build VM into the template')['changed']
    assert run.one('Turn a provisioned build container into a container template')['changed']
    assert lab.call(lambda: [(ct.config['hostname'], ct.template) for ct in lab.pve.cts if ct.vmid == 4712]) == [('cache-golden', True)]
    assert re.fullmatch(r'web-golden-[0-9a-f]{8}', run.one('Keep the old template for its linked clones, under another name')['name'])
    assert run.one('Remove a retired generation once no clone uses it')['changed'] and 4711 not in guests(lab)


def test_a_conversion_whose_tags_the_datacenters_settings_refuse_is_refused_before_any_write_and_keeps_their_spelling(lab, tmp_path):
    # pve-guest-common GuestHelpers.pm assert_tag_permissions: under user-tag-access `existing`, a tag no guest has
    # (puls-retired, before the first retirement) needs Sys.Modify on /; the conversion retires the previous template.
    api = lab_vms.client(lab)
    lab.call(lambda: lab.pve.datacenter.update({'tag-style': {'case-sensitive': 1}}))
    lab_vms.clone(api, 120, 'web-build', tags='puls-building;Team-A')
    template(api, 201, 'web-golden')
    linked_clone(api, 210, 'web1', 201)  # so the previous template is retired, not destroyed
    user, token, secret = 'tpl@pve', 'automation', 'c0ffee00-template-tags'
    grants = {
        '/': {'Sys.Audit'},
        '/vms': {'VM.Allocate', 'VM.Audit', 'VM.Config.Cloudinit', 'VM.Config.CDROM', 'VM.Config.Options', 'VM.PowerMgmt'},
        '/storage': {'Datastore.Allocate', 'Datastore.AllocateSpace', 'Datastore.Audit'},
    }
    lab.call(lambda: lab.pve.add_api_token(user, token, secret, grants))
    env = dict(lab.env, PROXMOX_USER=user, PROXMOX_TOKEN_NAME=token, PROXMOX_TOKEN_SECRET=secret, XDG_CACHE_HOME=str(tmp_path / 'cache'))
    lab.call(lambda: lab.pve.datacenter.update({'user-tag-access': {'user-allow': 'existing'}}))
    convert = task('Convert', name='web-golden', vmid=120, state='converted', spec=SPEC)
    writes = len(lab.writes())
    for check in (True, False):
        refused = run_playbook(tmp_path, template_play(convert), env, LOCALHOST, check=check, name=f'refused-{check}')
        message = refused.one('Convert')['msg']
        assert 'refused before any change' in message, message
        assert 'Permission check failed (/, Sys.Modify) to retire the previous template: to set the tag puls-retired' in message, message
    assert len(lab.writes()) == writes and config(api, 201)['name'] == 'web-golden'

    # Allowed, it converts; the build's own tag keeps its spelling under the case-sensitive tag-style.
    allowed = ['puls-building', 'puls-managed', 'puls-retired']
    lab.call(lambda: lab.pve.datacenter.update({'user-tag-access': {'user-allow': 'list', 'user-allow-list': allowed}}))
    made = run_playbook(tmp_path, template_play(dict(convert, ignore_errors=False)), env, LOCALHOST, name='made')
    assert made.rc == 0, made.stdout
    assert config(api, 120)['tags'] == 'Team-A;puls-managed' and made.one('Convert')['diff']['after']['tags'] == ['Team-A', 'puls-managed']
    assert set(config(api, 201)['tags'].split(';')) == {'puls-managed', 'puls-retired'}
