"""API token privilege separation (lab/pve/privileges.py): a privsep token holds what both it and its user hold."""

import pytest
import requests

CONFIG = '/nodes/pve1/qemu/9017/config'


def as_token(lab, tokenid, secret):
    session = requests.Session()
    session.headers['Authorization'] = f'PVEAPIToken={tokenid}={secret}'

    def call(method, path, **params):
        where = 'params' if method == 'GET' else 'data'
        response = session.request(method, lab.url + '/api2/json' + path, verify=lab.cafile, timeout=30, **{where: params})
        return response.status_code, (response.json().get('message') or '').strip()

    return call


def token(lab, name, grants, privsep=True, user_grants=None):
    tokenid = lab.call(lambda: lab.pve.add_api_token('bob@pve', name, name + '-secret', grants, privsep=privsep, user_grants=user_grants))
    return as_token(lab, tokenid, name + '-secret')


def test_a_privsep_token_holds_only_what_both_it_and_its_user_hold(lab):
    call = token(lab, 'both', {'/vms': ['VM.Audit', 'VM.Config.CPU']}, user_grants={'/': ['VM.Audit', 'VM.Config.Memory']})
    assert call('GET', CONFIG)[0] == 200
    # The token alone holds VM.Config.CPU, the user alone VM.Config.Memory: neither is in effect.
    assert call('PUT', CONFIG, cores=4) == (403, 'Permission check failed (/vms/9017, VM.Config.CPU)')
    assert call('PUT', CONFIG, memory=4096) == (403, 'Permission check failed (/vms/9017, VM.Config.Memory)')


def test_a_fresh_privsep_token_of_a_privileged_user_can_do_nothing(lab):
    call = token(lab, 'fresh', {}, user_grants={'/': ['VM.Audit', 'Sys.Audit']})
    assert call('GET', CONFIG) == (403, 'Permission check failed (/vms/9017, VM.Audit)')
    assert call('GET', '/access/permissions') == (200, '')


def test_a_token_without_privsep_holds_its_users_privileges_and_ignores_its_own_acl(lab):
    call = token(lab, 'shared', {'/vms': ['VM.Config.CPU']}, privsep=False, user_grants={'/vms': ['VM.Audit']})
    assert call('GET', CONFIG)[0] == 200
    assert call('PUT', CONFIG, cores=4) == (403, 'Permission check failed (/vms/9017, VM.Config.CPU)')


def test_grants_on_a_parent_path_reach_the_child_for_both(lab):
    call = token(lab, 'tree', {'/': ['VM.Audit', 'VM.Config.CPU']})
    assert call('PUT', CONFIG, cores=4)[0] == 200
    assert call('PUT', '/nodes/pve1/config', description='x') == (403, 'Permission check failed (/, Sys.Modify)')


def test_the_tokens_permissions_listing_shows_what_it_holds_in_effect(lab, api):
    tokenid = lab.call(lambda: lab.pve.add_api_token('bob@pve', 'list', 's3cret', {'/vms': ['VM.Audit', 'VM.Config.CPU']}, user_grants={'/': ['VM.Audit']}))
    assert api.data('GET', '/access/permissions', userid=tokenid) == {'/vms': {'VM.Audit': 1}}


def test_a_root_token_is_refused_by_the_helper(lab):
    with pytest.raises(ValueError, match='non-root user'):
        lab.call(lambda: lab.pve.add_api_token('root@pam', 'x', 'y', {}))


def test_a_vm_in_a_pool_holds_the_pools_privileges_listed_as_not_propagating(lab, api):
    api.data('POST', '/pools', poolid='web')
    api.data('PUT', '/pools/web', vms='9017')
    grants = {'/pool/web': ['VM.Audit', 'VM.Config.CPU'], '/vms': ['VM.Audit']}
    tokenid = lab.call(lambda: lab.pve.add_api_token('bob@pve', 'pool', 'pool-secret', grants))
    call = as_token(lab, tokenid, 'pool-secret')
    assert call('PUT', CONFIG, cores=4)[0] == 200
    assert call('PUT', '/nodes/pve1/qemu/9017/config', memory=4096) == (403, 'Permission check failed (/vms/9017, VM.Config.Memory)')
    listed = api.data('GET', '/access/permissions', userid=tokenid)
    # VM.Audit comes from /vms too (propagated); VM.Config.CPU only from the pool (RPCEnvironment.pm: never propagated).
    assert listed['/vms/9017'] == {'VM.Audit': 1, 'VM.Config.CPU': 0}
    assert listed['/pool/web'] == {'VM.Audit': 1, 'VM.Config.CPU': 1}


def test_a_cloud_init_key_takes_vm_config_cloudinit_or_vm_config_network(lab):
    network = token(lab, 'network', {'/vms': ['VM.Audit', 'VM.Config.Network']})
    assert network('PUT', CONFIG, ciuser='alice')[0] == 200
    assert network('PUT', CONFIG, ipconfig0='ip=dhcp')[0] == 200
    cloudinit = token(lab, 'cloudinit', {'/vms': ['VM.Audit', 'VM.Config.Cloudinit']})
    assert cloudinit('PUT', CONFIG, sshkeys='ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIDx%20a')[0] == 200
    neither = token(lab, 'neither', {'/vms': ['VM.Audit', 'VM.Config.HWType']})
    assert neither('PUT', CONFIG, ciuser='alice') == (403, 'Permission check failed (/vms/9017, VM.Config.Cloudinit|VM.Config.Network)')


def test_the_general_options_take_vm_config_options(lab):
    options = token(lab, 'options', {'/vms': ['VM.Audit', 'VM.Config.Options']})
    assert options('PUT', CONFIG, ostype='l26')[0] == 200
    hwtype = token(lab, 'hwtype', {'/vms': ['VM.Audit', 'VM.Config.HWType']})
    assert hwtype('PUT', CONFIG, bios='ovmf') == (403, 'Permission check failed (/vms/9017, VM.Config.Options)')
