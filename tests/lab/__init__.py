"""The puls.proxmox lab: a Proxmox VE cluster for tests (LabPve on fakepve), SSH guests, DNS and served files.

    with Lab(tmp_path / 'lab') as lab:
        ...  # lab.env holds PROXMOX_URL, PROXMOX_TOKEN_NAME, ...

See README.md beside this file.
"""

from .pve import LabPve
from .serving import Lab

__all__ = ['Lab', 'LabPve']
