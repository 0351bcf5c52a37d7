"""Helpers for the lab's own tests: an API client that verifies TLS against the lab's CA, and SSH keys."""

import subprocess
import time

import pytest
import requests

TASK_WAIT_SECS = 20


class Api:
    """PVE API calls with the lab's token, TLS verified against lab.cafile (per request, so REQUESTS_CA_BUNDLE
    cannot override it)."""

    def __init__(self, lab):
        self.lab = lab
        self.session = requests.Session()
        self.session.headers['Authorization'] = f'PVEAPIToken={lab.token_id}={lab.token_secret}'

    def call(self, method, path, **params):
        """The response; params go in the query for GET, in the form body otherwise (as proxmoxer sends them)."""
        where = 'params' if method == 'GET' else 'data'
        return self.session.request(method, self.lab.url + '/api2/json' + path, verify=self.lab.cafile, timeout=30, **{where: params})

    def data(self, method, path, **params):
        response = self.call(method, path, **params)
        assert response.status_code == 200, (response.status_code, response.text)
        return response.json()['data']

    def error(self, method, path, **params):
        """(status, message, per-field errors) of a request that must fail."""
        response = self.call(method, path, **params)
        assert response.status_code != 200, response.text
        body = response.json()
        return response.status_code, (body.get('message') or '').strip(), body.get('errors') or {}

    def config(self, vmid, node='pve1', **params):
        return self.data('GET', f'/nodes/{node}/qemu/{vmid}/config', **params)

    def wait(self, upid):
        """The task's final status, with its log lines under 'log'."""
        node = upid.split(':')[1]
        deadline = time.monotonic() + TASK_WAIT_SECS
        while True:
            status = self.data('GET', f'/nodes/{node}/tasks/{upid}/status')
            if status['status'] == 'stopped':
                log = self.data('GET', f'/nodes/{node}/tasks/{upid}/log', limit=1000)
                return dict(status, log=[line['t'] for line in log])
            assert time.monotonic() < deadline, f'task {upid} still running'
            time.sleep(0.02)

    def run(self, method, path, **params):
        """Start a task and wait for it: its final status."""
        return self.wait(self.data(method, path, **params))

    def download(self, url, content, filename, storage='local', **params):
        """POST download-url and wait: the task's final status."""
        return self.run('POST', f'/nodes/pve1/storage/{storage}/download-url', url=url, content=content, filename=filename, **params)

    def clone(self, newid, source=9017, **params):
        status = self.run('POST', f'/nodes/pve1/qemu/{source}/clone', newid=newid, **params)
        assert status['exitstatus'] == 'OK', status
        return status


@pytest.fixture
def api(lab):
    return Api(lab)


@pytest.fixture
def ssh_key(tmp_path):
    """An ed25519 key pair made by ssh-keygen: (private key path, public key line)."""
    path = tmp_path / 'id_ed25519'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'lab-test', '-f', str(path)], check=True)
    return path, (tmp_path / 'id_ed25519.pub').read_text().strip()
