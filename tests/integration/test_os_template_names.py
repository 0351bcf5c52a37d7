# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A container's OS template named as PVE's appliance index names it (debian-12-standard, ubuntu-24.04-standard, or
the file name), through puls.proxmox.site against the lab: resolved at run time to the newest matching vztmpl volume
on the node's storages, else downloaded from the node's appliance index (POST /nodes/{node}/aplinfo) onto the first
storage with content vztmpl, the check run planning the download; a name found nowhere stops the run before any change,
and so does a download the credential may not make (docs/privileges.md's recipe is enough). A container template named
so is built from the download, and then left alone.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_os_template_names.py -p no:xdist
"""

from __future__ import annotations

import lab_vms
import pytest
from lab.images import CONTAINER_TEMPLATE, UBUNTU_CONTAINER_TEMPLATE
from test_least_privilege import TOKEN, USER, documented_grants, token_env
from test_plan_equals_run import machines, plan_then_run
from test_reconcile_containers import fleet

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'


def inventory(lab, image):
    container = {'image': image, 'node': 'pve1', 'storage': 'local-lvm', 'ip': f'{lab.address(53)}/24', 'gateway': lab.gateway}
    return {'all': {'children': {'pve_containers': {'hosts': {'dns-01': {'pve_container': container, 'pve_power': 'stopped'}}}}}}


def site(lab, tmp_path, image, name, check=False):
    return run_playbook(tmp_path, SITE, lab.env, inventory=inventory(lab, image), check=check, name=name)


def ostemplate(lab):
    """The OS template the container was created from (its create's ostemplate)."""
    (create,) = [r for r in lab.writes() if r.method == 'POST' and r.path.endswith('/nodes/pve1/lxc')]
    return dict(part.split('=', 1) for part in create.body.split('&'))['ostemplate'].replace('%3A', ':').replace('%2F', '/')


def aplinfo_downloads(lab):
    return [r for r in lab.writes() if r.path.endswith('/nodes/pve1/aplinfo')]


def test_a_name_found_on_no_storage_is_downloaded_from_the_appliance_index_and_planned_in_check_mode(lab, tmp_path):
    planned = site(lab, tmp_path, 'ubuntu-24.04-standard', 'plan', check=True)
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert lab.writes() == []
    assert planned.plans == {UBUNTU_CONTAINER_TEMPLATE: ['create'], 'dns-01': ['create']}

    applied = site(lab, tmp_path, 'ubuntu-24.04-standard', 'apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == planned.plans
    (download,) = aplinfo_downloads(lab)
    assert f'template={UBUNTU_CONTAINER_TEMPLATE}' in download.body and 'storage=local' in download.body
    assert ostemplate(lab) == f'local:vztmpl/{UBUNTU_CONTAINER_TEMPLATE}'
    assert lab.volume_bytes(f'local:vztmpl/{UBUNTU_CONTAINER_TEMPLATE}') == lab.served.fetch(lab.served.url(UBUNTU_CONTAINER_TEMPLATE))

    writes = len(lab.writes())
    again = site(lab, tmp_path, 'ubuntu-24.04-standard', 'again')
    assert again.rc == 0 and not again.changed, again.stdout
    # The container exists: its image is not looked at again.
    assert again.plans == {'dns-01': ['ok']} and len(lab.writes()) == writes


def test_the_newest_matching_volume_on_the_nodes_storages_is_taken_by_package_or_file_name(lab, tmp_path):
    api = lab_vms.client(lab)
    url = lab.served.url(CONTAINER_TEMPLATE)
    # 12.10-1 is newer than 12.9-1, as numbers (as text it sorts first).
    for filename in ('debian-12-standard_12.9-1_amd64.tar.zst', 'debian-12-standard_12.10-1_amd64.tar.zst'):
        api.run_task('POST', '/nodes/pve1/storage/local/download-url', url=url, content='vztmpl', filename=filename)
    writes = len(lab.writes())
    planned = site(lab, tmp_path, 'debian-12-standard', 'plan', check=True)
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert planned.plans == {'debian-12-standard_12.10-1_amd64.tar.zst': ['ok'], 'dns-01': ['create']}
    applied = site(lab, tmp_path, 'debian-12-standard', 'apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert ostemplate(lab) == 'local:vztmpl/debian-12-standard_12.10-1_amd64.tar.zst'
    assert aplinfo_downloads(lab) == [] and len(lab.writes()) > writes


def test_a_name_on_no_storage_and_in_no_index_stops_the_run_before_any_change(lab, tmp_path):
    for name, check in (('plan', True), ('apply', False)):
        run = site(lab, tmp_path, 'debian-99-standard', name, check=check)
        assert run.rc != 0, run.stdout
        assert "'debian-99-standard' is no OS template on the storages of node pve1 nor in its appliance index" in run.stdout, run.stdout
    assert lab.writes() == []


def test_a_token_that_may_not_put_templates_on_the_storage_is_refused_the_download_in_the_check_run_before_any_write(lab, tmp_path):
    grants = documented_grants()
    grants['/storage/local'] = grants['/storage/local'] - {'Datastore.AllocateTemplate'}
    env = token_env(lab, tmp_path, grants)
    for name, check in (('plan', True), ('apply', False)):
        run = run_playbook(tmp_path, SITE, env, inventory=inventory(lab, 'ubuntu-24.04-standard'), check=check, name=name)
        assert run.rc != 0, run.stdout
        assert (
            f'the plan for local:vztmpl/{UBUNTU_CONTAINER_TEMPLATE} refused before any change: API token {USER}!{TOKEN} lacks privileges the plan '
            f'needs: Permission check failed (/storage/local, Datastore.AllocateTemplate) to download the OS template {UBUNTU_CONTAINER_TEMPLATE} '
            'onto storage local of pve1'
        ) in run.stdout, run.stdout
    assert lab.writes() == []


def test_the_documented_privileges_are_enough_to_download_an_os_template_and_create_the_container(lab, tmp_path):
    env = token_env(lab, tmp_path, documented_grants())
    applied = run_playbook(tmp_path, SITE, env, inventory=inventory(lab, 'ubuntu-24.04-standard'), name='apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == {UBUNTU_CONTAINER_TEMPLATE: ['create'], 'dns-01': ['create']}
    assert ostemplate(lab) == f'local:vztmpl/{UBUNTU_CONTAINER_TEMPLATE}'


@pytest.mark.slow(minutes=2)
def test_a_container_template_named_by_its_package_is_built_from_the_download_and_then_left_alone(lab, tmp_path):
    golden = {'image': 'debian-12-standard', 'storage': 'local-lvm', 'node': 'pve1', 'ip': f'{lab.address(44)}/24', 'gateway': lab.gateway, 'memory': 256}
    declared = fleet(lab, tmp_path, {'ct-golden': {'pve_container': golden}}, {})
    del declared['all']['vars']['pve_isos']  # the OS template comes from the appliance index alone
    # Planned, made as planned, then nothing to do (the OS template found on the storage, the template current).
    planned, _applied = plan_then_run(lab, tmp_path, declared)
    assert machines(planned.plan) == {('iso', CONTAINER_TEMPLATE): ['create'], ('template', 'ct-golden'): ['build']}
    assert len(aplinfo_downloads(lab)) == 1
    assert ostemplate(lab) == f'local:vztmpl/{CONTAINER_TEMPLATE}'
    assert lab.call(lambda: [ct.config.get('hostname') for ct in lab.pve.cts if ct.template]) == ['ct-golden']


def test_one_name_of_containers_on_two_nodes_is_downloaded_on_each_node_that_lacks_it(lab, tmp_path):
    hosts = inventory(lab, 'ubuntu-24.04-standard')['all']['children']['pve_containers']['hosts']
    second = dict(hosts['dns-01']['pve_container'], node='pve2', ip=f'{lab.address(54)}/24')
    hosts['dns-02'] = {'pve_container': second, 'pve_power': 'stopped'}
    declared = {'all': {'children': {'pve_containers': {'hosts': hosts}}}}
    planned = run_playbook(tmp_path, SITE, lab.env, inventory=declared, check=True, name='plan')
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert planned.plans == {UBUNTU_CONTAINER_TEMPLATE: ['create'], 'dns-01': ['create'], 'dns-02': ['create']} and lab.writes() == []
    applied = run_playbook(tmp_path, SITE, lab.env, inventory=declared, name='apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == planned.plans
    # On PVE local is each node's own (not shared), so the one volume ID is downloaded on each node that lacks it. The
    # lab's storages are one for all nodes (fakepve), so there pve2 then finds pve1's download: the task is asked for
    # both nodes, and downloads once.
    (downloads,) = [r['result']['results'] for r in applied.results if r['task'].endswith("Download the OS template from the node's appliance index")]
    assert sorted(item['reconcile_os_template_plan']['reconcile_os_template']['node'] for item in downloads) == ['pve1', 'pve2']
    assert [item['changed'] for item in downloads] == [True, False]
    assert len([r for r in lab.writes() if r.path.endswith('/aplinfo')]) == 1
