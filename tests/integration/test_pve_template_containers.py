# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_template with guest_type lxc through real ansible-playbook runs against the lab: a build container's conversion,
which pve-container answers with null and runs in a vztemplate task (waited for, then checked); a build on thick LVM,
refused before any write and, for a spec that declares it, before any build; a ZFS container template that a linked
clone uses, refused up front; the DNS settings a container template keeps and the build's addresses it does not; and
the privilege that renaming a container takes.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_template_containers.py -p no:xdist
"""

from __future__ import annotations

import lab_vms
import pytest
from lab.images import CONTAINER_TEMPLATE
from pve_vm_plays import sent
from test_pve_container import put_template
from test_pve_template import LOCALHOST, task, template_play
from test_reconcile_containers import SITE, fleet, site

from ansible_collections.puls.proxmox.plugins.module_utils import _template_io, _template_plan
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._ownership import with_record
from playbooks import four_runs, run_playbook

NODE = 'pve1'
LXC = f'/nodes/{NODE}/lxc'
OS_TEMPLATE = f'local:vztmpl/{CONTAINER_TEMPLATE}'
SPEC = {'image': OS_TEMPLATE, 'storage': 'local-lvm', 'memory': 256}
THICK_LVM = {'type': 'lvm', 'active': 1, 'content': 'images,rootdir', 'vgname': 'big', 'shared': 0}
ZFS = {'type': 'zfspool', 'active': 1, 'content': 'images,rootdir', 'pool': 'tank/data', 'sparse': 1}


def add_storage(lab, name, config):
    lab.call(lambda: lab.pve.storages.__setitem__(name, dict(config, files=set())))


def container_config(api, vmid):
    return api.vm_config(NODE, vmid, guest_type='lxc')


def build_container(lab, api, vmid, name, rootfs='local-lvm:1', **config):
    """A stopped build container as the bake leaves it: made from the OS template, tagged puls-building."""
    put_template(lab)
    api.run_task('POST', LXC, vmid=vmid, hostname=name, ostemplate=OS_TEMPLATE, rootfs=rootfs, tags='puls-building', **config)


def container_template(lab, api, vmid, name, rootfs):
    """An owned container template made straight through the API (its conversion answers null, its task done at once at
    time_scale 0), with the owner record and the template block pve_template's conversion writes."""
    build_container(lab, api, vmid, name, rootfs)
    notes = with_record('[puls-template: spec=%012x]' % vmid, 'puls-managed', vmid)
    api.put(f'{LXC}/{vmid}/config', tags='puls-managed', description=notes)
    assert api.request('POST', f'{LXC}/{vmid}/template') is None
    assert container_config(api, vmid)['template'] == 1


def converted(name, vmid, **options):
    return task(f'Convert {name}', name=name, guest_type='lxc', vmid=vmid, state='converted', spec=SPEC, **options)


@pytest.mark.lab(time_scale=0.01)
def test_a_build_container_becomes_a_template_once_its_unanswered_task_ends_keeping_its_dns_but_not_its_address(lab, tmp_path):
    api = lab_vms.client(lab)
    net0 = f'name=eth0,bridge=vmbr0,ip={lab.address(41)}/24,gw={lab.gateway}'
    build_container(lab, api, 170, 'ct-golden-build', net0=net0, nameserver='127.0.0.53', searchdomain='lab.test')
    # 3 s of real time: the module looks for the task while it runs, and renames the container only after it.
    lab.pve.ct_secs['template'] = 300
    options = {'name': 'ct-golden', 'guest_type': 'lxc', 'vmid': 170, 'state': 'converted', 'spec': SPEC}
    play = template_play({'name': 'Convert', 'puls.proxmox.pve_template': options})

    runs = four_runs(tmp_path, play, lab.env, inventory=LOCALHOST)

    config = container_config(api, 170)
    assert (config['template'], config['hostname'], config['tags']) == (1, 'ct-golden', 'puls-managed')
    assert config['rootfs'].startswith('local-lvm:base-170-disk-0,')
    assert (config['nameserver'], config['searchdomain']) == ('127.0.0.53', 'lab.test'), 'a container template keeps its DNS settings'
    assert 'ip=dhcp' in config['net0'] and 'gw=' not in config['net0'] and lab.address(41) not in config['net0']
    assert _template_plan.SPEC_KEY in _template_plan.recorded_entries(config['description'])
    diff = runs.real.one('Convert')['diff']
    before = dict(part.split('=', 1) for part in diff['before']['net0'].split(','))
    assert (before['ip'], before['gw']) == (f'{lab.address(41)}/24', lab.gateway) and diff['after']['net0'] == config['net0']
    assert 'nameserver' not in diff['before'] and 'nameserver' not in diff['after']
    # The rename came after the conversion's task, which the module found in the node's task list and waited for.
    conversion = [task for task in lab.call(lambda: list(lab.pve.tasklog)) if task['type'] == 'vztemplate']
    assert [task['exitstatus'] for task in conversion] == ['OK']
    renames = [request for request in sent(lab, 'PUT', '/lxc/170/config') if request.get('hostname') == 'ct-golden']
    assert len(renames) == 1


def test_a_build_container_on_thick_lvm_is_refused_before_any_write_and_a_spec_on_it_before_any_build(lab, tmp_path):
    api = lab_vms.client(lab)
    add_storage(lab, 'big', THICK_LVM)
    build_container(lab, api, 171, 'thick-build', rootfs='big:1')
    writes = len(lab.writes())

    for check in (True, False):
        run = run_playbook(
            tmp_path,
            template_play(
                converted('thick', 171),
                task('Query a spec on thick LVM', name='thick', guest_type='lxc', spec=dict(SPEC, storage='big')),
            ),
            lab.env,
            inventory=LOCALHOST,
            check=check,
            name='check' if check else 'real',
        )
        refusals = {record['task']: (record['result'].get('option'), record['result']['msg']) for record in run.failed}
        assert refusals == {
            'Convert thick': (
                'vmid',
                "vmid container 'thick-build' (171 on pve1) cannot become a template: rootfs is on 'big', a thick LVM storage "
                "(type lvm), which cannot hold a container template: PVE would fail its conversion with 'Template feature is "
                "not available'; put template 'thick' on a storage that can (LVM-thin, ZFS, Ceph RBD, a directory)",
            ),
            'Query a spec on thick LVM': (
                'spec',
                "spec storage is on 'big', a thick LVM storage (type lvm), which cannot hold a container template: PVE would "
                "fail its conversion with 'Template feature is not available'; put template 'thick' on a storage that can "
                '(LVM-thin, ZFS, Ceph RBD, a directory)',
            ),
        }, run.stdout
    assert lab.writes()[writes:] == []
    config = container_config(api, 171)
    assert 'template' not in config and config['hostname'] == 'thick-build'


def test_a_zfs_container_template_used_by_a_linked_clone_is_refused_up_front_and_goes_once_the_clone_is_gone(lab, tmp_path):
    api = lab_vms.client(lab)
    add_storage(lab, 'tank', ZFS)
    container_template(lab, api, 172, 'zfs-golden', 'tank:1')
    api.run_task('POST', f'{LXC}/172/clone', newid=173, hostname='zfs-app', full=0)
    assert container_config(api, 173)['rootfs'].startswith('tank:basevol-172-disk-0/subvol-173-disk-0,')
    absent = template_play(task('Remove', name='zfs-golden', guest_type='lxc', state='absent'))

    for check in (True, False):
        run = run_playbook(tmp_path, absent, lab.env, inventory=LOCALHOST, check=check, name='check' if check else 'real')
        assert [(record['result'].get('option'), record['result']['msg']) for record in run.failed] == [
            (
                'state',
                "state absent refused: linked clones use template 'zfs-golden' (172 on pve1): zfs-app (173); destroy them "
                'first, or retire the template (state: retired) to keep it under another name',
            )
        ], run.stdout
    assert not sent(lab, 'DELETE', '/lxc/172')

    api.run_task('DELETE', f'{LXC}/173')
    runs = four_runs(tmp_path, absent, lab.env, inventory=LOCALHOST)
    assert runs.real.one('Remove')['changed']
    assert lab.call(lambda: [ct.vmid for ct in lab.pve.cts]) == []


def test_renaming_a_build_container_takes_network_rights_checked_before_any_write(lab, tmp_path):
    """pve-container src/PVE/LXC.pm check_ct_modify_config_perm: hostname takes VM.Config.Network."""
    api = lab_vms.client(lab)
    build_container(lab, api, 174, 'net-golden-build')
    user, token, secret = 'tpl@pve', 'automation', 'c0ffee00-template-privileges'
    grants = {'/vms': {'VM.Audit', 'VM.Allocate', 'VM.Config.Options', 'VM.PowerMgmt'}, '/storage': {'Datastore.Audit'}, '/': {'Sys.Audit'}}
    lab.call(lambda: lab.pve.add_api_token(user, token, secret, grants))
    env = dict(lab.env, PROXMOX_USER=user, PROXMOX_TOKEN_NAME=token, PROXMOX_TOKEN_SECRET=secret, XDG_CACHE_HOME=str(tmp_path / 'cache'))
    writes = len(lab.writes())
    run = run_playbook(tmp_path, template_play(converted('net-golden', 174)), env, inventory=LOCALHOST, name='limited')
    [refused] = run.failed
    assert 'VM.Config.Network' in refused['result']['msg'] and '/vms/174' in refused['result']['msg'], refused['result']['msg']
    assert lab.writes()[writes:] == []
    assert 'template' not in container_config(api, 174)


def test_prune_destroys_an_undeclared_container_template_and_keeps_one_a_linked_clone_uses(lab, tmp_path):
    """Through puls.proxmox.site: a container template goes by pve_template (pve_container refuses a template), and its
    linked clones are those of the containers, here on ZFS where the clone's volume names its basevol- base."""
    api = lab_vms.client(lab)
    add_storage(lab, 'tank', ZFS)
    container_template(lab, api, 175, 'old-golden', 'local-lvm:1')
    container_template(lab, api, 176, 'zfs-golden', 'tank:1')
    api.run_task('POST', f'{LXC}/176/clone', newid=177, hostname='zapp', full=0)
    clone_notes = with_record(container_config(api, 177)['description'], 'puls-managed', 177)
    api.put(f'{LXC}/177/config', description=clone_notes)
    inventory = fleet(lab, tmp_path, {}, {'zapp': {'pve_container': {'image': 'zfs-golden'}, 'pve_power': 'stopped'}})
    inventory['all']['vars']['pve_prune'] = True

    planned = site(lab, tmp_path, inventory, 'plan', check=True)
    applied = site(lab, tmp_path, inventory, 'apply')
    guests = {name: actions for name, actions in applied.plans.items() if name != CONTAINER_TEMPLATE}
    assert planned.plans == applied.plans and guests == {'zapp': ['ok'], 'old-golden': ['prune'], 'zfs-golden': ['orphan']}
    assert lab.call(lambda: sorted(ct.vmid for ct in lab.pve.cts)) == [176, 177]
    assert len(sent(lab, 'DELETE', '/lxc/175')) == 1 and not sent(lab, 'DELETE', '/lxc/176')


def test_a_container_template_declared_on_thick_lvm_fails_the_check_run_and_the_real_run_before_any_build(lab, tmp_path):
    add_storage(lab, 'big', THICK_LVM)
    golden = {'pve_container': {'image': OS_TEMPLATE, 'storage': 'big', 'node': NODE, 'ip': f'{lab.address(45)}/24', 'gateway': lab.gateway}}
    inventory = fleet(lab, tmp_path, {'thick-golden': golden}, {})
    for check in (True, False):
        run = run_playbook(tmp_path, SITE, lab.env, inventory=inventory, check=check, name='check' if check else 'real')
        assert run.rc != 0
        failures = {record['result']['msg'] for record in run.failed if record['host'] == 'thick-golden'}
        assert len(failures) == 1 and failures.pop().startswith("spec storage is on 'big', a thick LVM storage (type lvm), which cannot hold a"), run.stdout
    assert lab.call(lambda: lab.pve.cts) == [], 'no build container was made'


@pytest.mark.lab(time_scale=0.01)
def test_a_conversion_failing_in_its_task_is_reported_with_storage_advice_only_for_the_missing_template_feature(lab):
    """run_conversion against the lab, past the up-front refusal (which a storage the credential cannot see escapes): the
    vztemplate task's failure is found and raised, with what to do when the storage lacks the template feature."""
    api = lab_vms.client(lab)
    add_storage(lab, 'big', THICK_LVM)
    lab.pve.ct_secs['template'] = 100
    build_container(lab, api, 178, 'thick-build', rootfs='big:1')
    build_container(lab, api, 179, 'snap-build')
    api.run_task('POST', f'{LXC}/179/snapshot', snapname='before')
    request = _template_plan.TemplateRequest(name='thick', guest_type='lxc', timeout=60)

    with pytest.raises(PveApiError) as failed:
        _template_io.run_conversion(api, request, {'vmid': 178, 'node': NODE, 'name': 'thick-build', 'type': 'lxc'})
    message = str(failed.value)
    assert failed.value.reason == "Template feature is not available for 'big:vm-178-disk-0'"
    assert "container 'thick-build' (178 on pve1) stays a normal guest" in message and 'LVM-thin, ZFS' in message, message
    assert 'template' not in container_config(api, 178)

    with pytest.raises(PveApiError) as refused:
        _template_io.run_conversion(api, request, {'vmid': 179, 'node': NODE, 'name': 'snap-build', 'type': 'lxc'})
    assert refused.value.reason.strip() == 'unable to create template, because CT contains snapshots'
    assert 'LVM-thin' not in str(refused.value)
