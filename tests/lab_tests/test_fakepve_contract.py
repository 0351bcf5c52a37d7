"""What the lab relies on in fakepve: LabPve overrides private methods and wraps task bodies, so an upgrade that
renames or changes any of it must fail here, loudly, before the lab misbehaves quietly."""

import asyncio
import inspect
import ssl

import aiohttp
import fakepve
import pytest
from fakepve import FakePve, FakeVm, agent, lxc, qemu, routing, schema, server, storage
from fakepve.certs import make_cert
from lab.pve import tags
from urllib3 import encode_multipart_formdata

HOST = '127.0.0.1'

# Methods LabPve overrides, with the parameters it receives and passes on.
OVERRIDDEN = {
    '_apply_config': ['self', 'vm', 'user', 'p'],
    '_check_modify_perm': ['self', 'user', 'vmid', 'pool', 'old', 'new', 'deletes', 'unprivileged'],
    '_cluster_status': ['self', 'request'],
    '_config_get': ['self', 'request'],
    '_config_priv': ['self', 'key'],
    '_config_post': ['self', 'request'],
    '_do_resume': ['self', 'vm', 'user', 'p'],
    '_do_shutdown': ['self', 'vm', 'user', 'p'],
    '_do_start': ['self', 'vm', 'user', 'p'],
    '_do_suspend': ['self', 'vm', 'user', 'p'],
    '_do_stop': ['self', 'vm', 'user', 'p'],
    '_download_url': ['self', 'request'],
    '_lxc_clone': ['self', 'user', 'v'],
    '_lxc_create': ['self', 'user', 'v'],
    '_lxc_template': ['self', 'user', 'v'],
    '_lxc_resize': ['self', 'user', 'v'],
    '_nodes': ['self', 'request'],
    '_qm_alloc': ['self', 'sid', 'vmid', 'fmt', 'size', 'linked_from'],
    '_qm_check_drive': ['self', 'user', 'vmid', 'pool', 'key', 'value', 'default'],
    '_qm_clone': ['self', 'v', 'user'],
    '_qm_create': ['self', 'v', 'user'],
    '_qm_new_drive': ['self', 'vmid', 'key', 'value', 'default'],
    '_read_body': ['self', 'request'],
    '_realise': ['self', 'vmid', 'key', 'value', 'taken', 'default_storage'],
    '_register_stateful': ['self', 'router', 'prefixes'],
    '_resources': ['self', 'request'],
    '_task_list': ['self', 'request'],
    '_update_config': ['self', 'ct', 'user', 'values', 'deletes', 'reverts'],
    '_upload': ['self', 'request'],
    'task': ['self', 'node', 'ttype', 'tid', 'user', 'body', 'vm', 'lock', 'log'],
}
# fakepve methods the lab calls.
CALLED = (
    '_check_lock',
    '_complete',
    '_config_lock',
    '_ct_check_lock',
    '_ct_task',
    '_find_ct',
    '_file_storage',
    '_need_file_storage',
    '_need_running',
    '_parse_volname',
    '_powerdown',
    '_qm_free',
    '_qm_image_store',
    '_qm_taken',
    '_qm_volume',
    '_store',
    '_task_owner',
    '_task_view',
    '_verify',
    '_vm',
    '_volume_path',
    '_volumes',
    'acquire',
    'add_node',
    'add_vm',
    'allowed',
    'answer',
    'ct',
    'guest',
    'find',
    'need_quorum',
    'pause',
    'release',
    'require',
    'start',
    'stop',
    'store_file',
    'vm',
)
# Module-level names the lab imports.
IMPORTED = {
    agent: ('KEYS',),
    lxc: ('FakeCt', 'NEW_DISK', 'normalise', 'SIZE_UNITS', 'format_size', 'mount_type', 'parse_mount', 'parse_size', 'print_mount', 'split_props', 'to_base'),
    qemu: ('DRIVE_KEY', 'NET_MODELS', 'NEW_DISK', 'drives_of', 'is_cdrom', 'join_drive', 'split_drive', 'volume_ref', 'with_mac'),
    routing: ('die', 'param_error', 'split_list'),
    schema: ('_prop', 'check_value', 'load'),
    server: ('USER', 'ok', 'params'),
    storage: ('_is_file',),
}
# The fault-injection API tests use through the lab, with its parameters.
FAULTS = {
    'fail': ['self', 'method', 'suffix', 'status', 'message', 'html', 'error', 'times'],
    'flaky_network': ['self', 'drop_rate', 'hang_rate', 'hang_secs', 'seed'],
    'hold_config_lock': ['self', 'vmid', 'secs'],
    'lose_quorum': ['self'],
    'regain_quorum': ['self'],
    'release_config_lock': ['self', 'vmid'],
    'revoke_tickets': ['self'],
    'set_node_offline': ['self', 'node', 'offline'],
    'slow_network': ['self', 'latency', 'jitter', 'node'],
}


def parameters(function):
    return list(inspect.signature(function).parameters)


def test_fakepve_is_the_pinned_version():
    assert fakepve.__version__ == '0.5.0'


@pytest.mark.parametrize('name', sorted(OVERRIDDEN))
def test_an_overridden_method_keeps_its_name_and_parameters(name):
    assert parameters(getattr(FakePve, name)) == OVERRIDDEN[name]


def test_aiohttp_answers_read_from_the_body_it_keeps_which_the_labs_paced_upload_read_sets():
    # transfer.py _paced_read sets request._read_bytes, which BaseRequest.read() answers once set.
    assert 'self._read_bytes' in inspect.getsource(aiohttp.web_request.BaseRequest.read)


def test_the_methods_and_names_the_lab_uses_exist():
    missing = [name for name in CALLED if not callable(getattr(FakePve, name, None))]
    missing += [f'{module.__name__}.{name}' for module, names in IMPORTED.items() for name in names if not hasattr(module, name)]
    vm = FakeVm(100, 'x')
    vm_attributes = ('config', 'pending', 'status', 'started_at', 'lock', 'lock_holder', 'agent', 'template', 'ha_managed', 'start_secs', 'start_error')
    missing += [name for name in vm_attributes if not hasattr(vm, name)]
    assert missing == []
    assert agent.KEYS['network-get-interfaces'] == 'interfaces'
    # tags.py replaces lxc.normalise, which fakepve's container create and update call for each value by name.
    source = inspect.getsource(lxc.LxcApi)
    assert source.count('normalise(opt, value)') == 2 and parameters(tags._fakepve_normalise) == ['key', 'value']
    # containers.py sets a container clone's duration; fakepve holds the source's disk lock that long.
    assert 'clone' in FakePve(host=HOST).ct_secs and "src.lock = 'disk'" in inspect.getsource(lxc.LxcApi._lxc_clone)


def test_the_fault_injection_api_exists():
    assert {name: parameters(getattr(FakePve, name)) for name in FAULTS} == FAULTS
    assert inspect.iscoroutinefunction(FakePve.hold_config_lock)
    pve = FakePve(host=HOST)
    assert (pve.time_scale, pve.requests, pve.lock_wait, pve.uploaded) == (0.0, [], 10, None)


class Spy(FakePve):
    """Records (task type, task id, vm, vm listed, vm lock) of every task started."""

    def __init__(self):
        super().__init__(host=HOST)
        self.started = []

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        self.started.append((ttype, tid, vm, vm in self.vms, vm and vm.lock))
        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)


def test_config_writes_still_defer_cloud_init_and_apply_agent_on_a_running_vm():
    # LabPve._fastplug corrects exactly this; if fakepve changes it, the correction must change too.
    pve = FakePve(host=HOST)
    vm = pve.add_vm(100, 'x', status='running', config={'cores': 1})
    asyncio.run(pve._apply_config(vm, 'root@pam', {'ciuser': 'alice', 'agent': '1', 'delete': 'cores'}))
    assert vm.pending == {'ciuser': 'alice', 'cores': None} and vm.config['agent'] == '1'


def test_a_clone_lists_its_locked_placeholder_before_starting_its_qmclone_task():
    pve = Spy()
    pve.storages['local-lvm']['volumes'] = {'base-9000-disk-0': {'content': 'images', 'format': 'raw', 'size': 1024**3, 'vmid': 9000}}
    pve.add_vm(9000, 't', template=True, config={'scsi0': 'local-lvm:base-9000-disk-0,size=1G', 'template': 1})
    asyncio.run(pve._qm_clone({'node': 'pve1', 'vmid': 9000, 'newid': 120}, 'root@pam'))
    ttype, tid, new, listed, lock = pve.started[0]
    assert (ttype, tid, new.vmid, listed, lock) == ('qmclone', 9000, 120, True, 'clone')
    assert pve.vm(120).config['scsi0'].startswith('local-lvm:vm-120-disk-0,')
    assert pve.vm(120).lock is None


def test_power_tasks_run_with_their_vm_and_end_before_returning_at_time_scale_zero():
    pve = Spy()
    vm = pve.add_vm(100, 'x', config={'cores': 1})

    async def cycle():
        await pve._do_start(vm, 'root@pam', {})
        assert vm.status == 'running'
        await pve._do_reboot(vm, 'root@pam', {})
        await pve._do_shutdown(vm, 'root@pam', {})
        await pve._do_start(vm, 'root@pam', {})
        await pve._do_stop(vm, 'root@pam', {})
        await pve._qm_destroy({'node': 'pve1', 'vmid': 100}, 'root@pam')

    asyncio.run(cycle())
    assert [(ttype, owner is vm) for ttype, _tid, owner, _listed, _lock in pve.started] == [
        ('qmstart', True),
        ('qmreboot', True),
        ('qmshutdown', True),
        ('qmstart', True),
        ('qmstop', True),
        ('qmdestroy', True),
    ]
    assert pve.vm(100) is None


async def _serve(certfile, keyfile, requests_to_make):
    """Serve a bare FakePve on loopback, make (method, path, body, content type) requests with a token; returns
    the FakePve and the (status, JSON) answers."""
    pve = FakePve(host=HOST, port=0)
    pve.apitokens['root@pam!t'] = 'secret'
    pve.add_vm(100, 'x', status='running', config={'cores': 1}, pending={'cores': 4})
    await pve.start(certfile, keyfile)
    answers = []
    try:
        async with aiohttp.ClientSession(headers={'Authorization': 'PVEAPIToken=root@pam!t=secret'}) as session:
            for method, path, body, content_type in requests_to_make:
                async with session.request(
                    method,
                    pve.url + '/api2/json' + path,
                    data=body,
                    headers={'Content-Type': content_type} if content_type else {},
                    ssl=ssl.create_default_context(cafile=certfile),
                ) as response:
                    answers.append((response.status, await response.json()))
    finally:
        await pve.stop()
    return pve, answers


def test_config_get_still_ignores_current_and_pending(tmp_path):
    certfile, keyfile, _der = make_cert(str(tmp_path), hosts=(HOST,))
    _pve, answers = asyncio.run(_serve(certfile, keyfile, [('GET', '/nodes/pve1/qemu/100/config', None, None)]))
    assert answers[0][1]['data']['cores'] == 1


def test_an_upload_leaves_its_form_fields_in_uploaded(tmp_path):
    certfile, keyfile, _der = make_cert(str(tmp_path), hosts=(HOST,))
    body, content_type = encode_multipart_formdata([('content', 'iso'), ('filename', ('seed.iso', b'ISO'))])
    pve, answers = asyncio.run(_serve(certfile, keyfile, [('POST', '/nodes/pve1/storage/local/upload', body, content_type)]))
    assert answers[0][0] == 200
    assert (pve.uploaded['content'], pve.uploaded['filename'], pve.uploaded['data']) == ('iso', 'seed.iso', b'ISO')
