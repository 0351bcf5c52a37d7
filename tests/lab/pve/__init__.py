"""LabPve: fakepve 0.5.0 with the gaps the collection touches closed (see tests/lab/README.md).

The overrides replace private fakepve methods; tests/lab_tests/test_fakepve_contract.py pins what they rely on.
"""

from fakepve import FakePve

from .aplinfo import AplinfoMixin
from .config import ConfigMixin
from .containers import ContainersMixin
from .ct_templates import CtTemplatesMixin
from .disks import DisksMixin
from .ha import HaMixin
from .lifecycle import LifecycleMixin
from .migration import MigrationMixin
from .network import NetworkMixin
from .node_config import NodeConfigMixin
from .nodes import NodesMixin
from .placement import PlacementMixin
from .privileges import PrivilegesMixin
from .sdn import SdnMixin
from .tags import TagsMixin
from .tasks import TasksMixin
from .transfer import TransferMixin

__all__ = ['LabPve']


class LabPve(
    AplinfoMixin,
    PrivilegesMixin,
    SdnMixin,
    TagsMixin,
    HaMixin,
    ConfigMixin,
    CtTemplatesMixin,
    ContainersMixin,
    DisksMixin,
    MigrationMixin,
    LifecycleMixin,
    PlacementMixin,
    TransferMixin,
    NodesMixin,
    NetworkMixin,
    NodeConfigMixin,
    TasksMixin,
    FakePve,
):
    def __init__(self, host, served, clone_secs=5, **kwargs):
        super().__init__(host=host, **kwargs)
        # The lab's files.ServedFiles: the only source download-url fetches from.
        self.served = served
        # PVE seconds a clone's disk copy takes (scaled by time_scale).
        self.clone_secs = clone_secs
        # volid -> bytes of every file the lab knows the content of.
        self.volume_data = {}
        # node -> (total, used by the node itself) memory in bytes.
        self.node_memory = {}
        # Awaited after every start, stop, reboot or destroy task (the lab's guests).
        self.power_listeners = []
