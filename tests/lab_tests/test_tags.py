"""The datacenter's tag settings (lab/pve/tags.py): how a VM's tags are written (pve-guest-common GuestHelpers.pm
get_unique_tags), who may set which (get_allowed_tags, assert_tag_permissions; qemu-server API2/Qemu.pm create_vm,
update_vm), and what GET /cluster/options shows (pve-manager API2/Cluster.pm get_options)."""

import requests

CONFIG = '/nodes/pve1/qemu/{0}/config'
OPTIONS = '/cluster/options'


def as_token(lab, grants, name='tags'):
    """Calls with a token of bob@pve holding grants ({path: privileges}): (status, message, data)."""
    secret = name + '-secret'
    tokenid = lab.call(lambda: lab.pve.add_api_token('bob@pve', name, secret, grants))
    session = requests.Session()
    session.headers['Authorization'] = f'PVEAPIToken={tokenid}={secret}'

    def call(method, path, **params):
        where = 'params' if method == 'GET' else 'data'
        response = session.request(method, lab.url + '/api2/json' + path, verify=lab.cafile, timeout=30, **{where: params})
        body = response.json()
        return response.status_code, (body.get('message') or '').strip(), body.get('data')

    return call


def datacenter(lab, **options):
    lab.call(lambda: lab.pve.datacenter.update(options))


def test_tags_are_lower_cased_and_sorted_by_default_and_kept_as_written_with_the_tag_style_set(lab, api):
    api.clone(120)
    api.data('PUT', CONFIG.format(120), tags='Web;db,Web prod')
    assert api.config(120)['tags'] == 'db;prod;web'
    datacenter(lab, **{'tag-style': {'case-sensitive': 1}})
    api.data('PUT', CONFIG.format(120), tags='Web;db,web prod')
    assert api.config(120)['tags'] == 'Web;db;prod;web'
    datacenter(lab, **{'tag-style': {'case-sensitive': 1, 'ordering': 'config'}})
    api.data('PUT', CONFIG.format(120), tags='prod;Web;db;prod')
    assert api.config(120)['tags'] == 'prod;Web;db'


def test_the_options_show_the_tag_style_and_the_allowed_tags_to_anyone_and_the_rest_with_sys_audit(lab, api):
    datacenter(lab, **{'tag-style': {'case-sensitive': 1}, 'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web']}, 'registered-tags': ['prod']})
    everything = api.data('GET', OPTIONS)
    assert everything['user-tag-access'] == {'user-allow': 'list', 'user-allow-list': ['web']} and everything['registered-tags'] == ['prod']
    # root@pam holds Sys.Modify on /: every tag it may set, the registered ones included.
    assert set(everything['allowed-tags']) >= {'web', 'prod'}
    call = as_token(lab, {'/vms': ['VM.Audit', 'VM.Config.Options']})
    status, _message, options = call('GET', OPTIONS)
    assert status == 200 and options == {'tag-style': {'case-sensitive': 1}, 'allowed-tags': ['web']}


def test_a_restricted_user_sets_only_allowed_tags_and_never_a_registered_one(lab, api):
    api.clone(121)
    api.data('PUT', CONFIG.format(121), tags='legacy')
    datacenter(lab, **{'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web', 'prod']}, 'registered-tags': ['prod']})
    call = as_token(lab, {'/vms': ['VM.Audit', 'VM.Config.Options']})
    assert call('PUT', CONFIG.format(121), tags='legacy;web')[0] == 200
    assert call('PUT', CONFIG.format(121), tags='legacy;web;db')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'db')")
    assert call('PUT', CONFIG.format(121), tags='legacy;web;prod')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'prod')")
    # Removing a tag is a change of it too.
    assert call('PUT', CONFIG.format(121), tags='web')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'legacy')")
    assert api.config(121)['tags'] == 'legacy;web'


def test_with_free_tags_any_tag_but_a_registered_one_is_set_without_sys_modify(lab, api):
    api.clone(122)
    datacenter(lab, **{'registered-tags': ['prod']})
    call = as_token(lab, {'/vms': ['VM.Audit', 'VM.Config.Options']})
    assert call('PUT', CONFIG.format(122), tags='anything')[0] == 200
    assert call('PUT', CONFIG.format(122), tags='anything;prod')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'prod')")


def test_a_create_with_tags_under_a_restricted_user_allow_is_refused_for_the_old_tags_create_vm_passes(lab, api):
    datacenter(lab, **{'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web']}})
    call = as_token(lab, {'/vms': ['VM.Allocate', 'VM.Audit', 'VM.Config.Options'], '/storage': ['Datastore.AllocateSpace']})
    status, message, _data = call('POST', '/nodes/pve1/qemu', vmid=123, tags='web')
    assert status == 403 and message.startswith("Permission check failed (/, Sys.Modify for modifying tag 'HASH(0x")


LXC = '/nodes/pve1/lxc'
CT_CONFIG = LXC + '/{0}/config'
CT_TEMPLATE = 'local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst'


def test_a_containers_tags_are_written_per_tag_style_on_create_and_update(lab, api):
    # pve-container src/PVE/LXC/Config.pm update_pct_config: get_unique_tags, as for a VM.
    assert api.run('POST', LXC, vmid=140, ostemplate=CT_TEMPLATE, rootfs='local-lvm:1', tags='Web;db')['exitstatus'] == 'OK'
    assert api.data('GET', CT_CONFIG.format(140))['tags'] == 'db;web'
    datacenter(lab, **{'tag-style': {'case-sensitive': 1}})
    api.data('PUT', CT_CONFIG.format(140), tags='Web;db,web')
    assert api.data('GET', CT_CONFIG.format(140))['tags'] == 'Web;db;web'
    assert api.run('POST', LXC, vmid=141, ostemplate=CT_TEMPLATE, rootfs='local-lvm:1', tags='Web')['exitstatus'] == 'OK'
    assert api.data('GET', CT_CONFIG.format(141))['tags'] == 'Web'


def test_a_restricted_user_sets_a_containers_allowed_tags_only_and_a_create_checks_no_old_tags(lab, api):
    # src/PVE/LXC.pm check_ct_modify_config_perm: assert_tag_permissions against the config's tags (create: none).
    assert api.run('POST', LXC, vmid=142, ostemplate=CT_TEMPLATE, rootfs='local-lvm:1', tags='legacy')['exitstatus'] == 'OK'
    datacenter(lab, **{'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web', 'prod']}, 'registered-tags': ['prod']})
    grants = {'/vms': ['VM.Allocate', 'VM.Audit', 'VM.Config.Options', 'VM.Config.Disk'], '/storage': ['Datastore.AllocateSpace', 'Datastore.Audit']}
    call = as_token(lab, grants)
    assert call('PUT', CT_CONFIG.format(142), tags='legacy;web')[0] == 200
    assert call('PUT', CT_CONFIG.format(142), tags='legacy;web;prod')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'prod')")
    assert call('PUT', CT_CONFIG.format(142), tags='web')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'legacy')")
    assert call('PUT', CT_CONFIG.format(142), delete='tags')[:2] == (403, "Permission check failed (/, Sys.Modify for modifying tag 'legacy')")
    assert api.data('GET', CT_CONFIG.format(142))['tags'] == 'legacy;web'
    # Unlike a VM's create_vm, no old tag: an allowed tag is set; the tags are checked as sent (case and all).
    assert call('POST', LXC, vmid=143, ostemplate=CT_TEMPLATE, rootfs='local-lvm:1', tags='web')[0] == 200
    assert call('POST', LXC, vmid=144, ostemplate=CT_TEMPLATE, rootfs='local-lvm:1', tags='Web')[:2] == (
        403,
        "Permission check failed (/, Sys.Modify for modifying tag 'Web')",
    )
