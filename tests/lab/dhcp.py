"""The lab's DHCP server, reduced to its lease table: one address per MAC, kept for the lab's lifetime."""


class DhcpPool:
    def __init__(self, addresses):
        self.addresses = tuple(addresses)
        # MAC (upper case) -> address
        self.leases = {}

    def __contains__(self, address):
        return address in self.addresses

    def __iter__(self):
        return iter(self.addresses)

    def lease(self, mac):
        """The address leased to mac: its earlier lease, else the first free one (None when the pool is empty).
        A new MAC (PVE gives a net device without one a random MAC) gets a new address, as on a real network."""
        mac = mac.upper()
        if mac not in self.leases:
            taken = set(self.leases.values())
            free = next((a for a in self.addresses if a not in taken), None)
            if free is None:
                return None
            self.leases[mac] = free
        return self.leases[mac]
