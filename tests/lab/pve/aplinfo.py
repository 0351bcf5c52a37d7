"""The node's appliance index as pve-manager serves it: GET /nodes/{node}/aplinfo lists the appliances (PVE/API2/Nodes.pm
aplinfo: PVE::APLInfo::load_data's `all`, without pve-web-news) and POST /nodes/{node}/aplinfo downloads one onto a
storage (PVE/API2/Nodes.pm apl_download), in a `download` task, from the entry's location with its checksum
(PVE::Tools::download_file_from_url of pve-common, hash_required).

The lab's index holds the OS templates the lab serves (lab.images.seed_files), each as PVE/APLInfo.pm
read_aplinfo_from_fh makes an entry of the signed aplinfo.dat: the fields of its record lower-cased, `template` the file
name of its `location`, `location` the URL. PVE's own index is downloaded from download.proxmox.com; the lab's entries
point at the lab's file server instead, so a download never leaves the lab.
"""

import hashlib

from fakepve.model import TaskError
from fakepve.routing import die, param_error, split_list

from ..images import OS_TEMPLATES

APLINFO = '/nodes/{node}/aplinfo'


class AplinfoMixin:
    def appliances(self):
        """{template file name: its entry}, as load_data's `all` has them (pve-manager aplinfo/aplinfo.dat's fields)."""
        index = {}
        for template, (package, version, os_name, headline) in OS_TEMPLATES.items():
            data = self.served.files[template]
            index[template] = {
                'package': package,
                'version': version,
                'type': 'lxc',
                'os': os_name,
                'section': 'system',
                'maintainer': 'Proxmox Support Team <support@proxmox.com>',
                'architecture': 'amd64',
                'location': self.served.url(template),
                'md5sum': hashlib.md5(data).hexdigest(),
                'sha512sum': hashlib.sha512(data).hexdigest(),
                'infopage': 'https://pve.proxmox.com/wiki/Linux_Container#pct_supported_distributions',
                'headline': headline,
                'description': headline,
                'source': self.served.base_url,
                'template': template,
            }
        return index

    def _routes_lab_aplinfo(self):
        return [('GET', APLINFO, self._lab_aplinfo), ('POST', APLINFO, self._lab_apl_download)]

    async def _lab_aplinfo(self, v, user):
        return list(self.appliances().values())

    async def _lab_apl_download(self, v, user):
        """apl_download: the template must be in the index, the storage enabled on the node and holding vztmpl."""
        appliance = self.appliances().get(v['template'])
        if appliance is None:
            raise param_error(template='no such template')
        storage, template = v['storage'], v['template']
        store = self._active_store(storage, v['node'])  # PVE::Storage::storage_check_enabled
        if 'vztmpl' not in split_list(store.get('content')):
            raise die(f"storage '{storage}' does not support templates")
        volid = f'{storage}:vztmpl/{template}'

        async def body():
            # download_file_from_url: an existing file of the right checksum is kept, one of another is refused.
            if f'vztmpl/{template}' in self._volumes(storage):
                if hashlib.sha512(self.volume_data.get(volid, b'')).hexdigest() != appliance['sha512sum']:
                    raise TaskError(f"checksum mismatch: got a file of another checksum at '{template}', aborting")
                return 'OK, got correct file already, no need to download'
            await self.pause(self.download_secs)
            data = self.served.fetch(appliance['location'])
            self.store_file(storage, template, len(data), 'vztmpl')
            self.volume_data[volid] = data
            return f"download of '{appliance['location']}' to '{template}' finished"

        return await self.task(v['node'], 'download', template, user, body, log=[f"downloading {appliance['location']} to {template}"])
