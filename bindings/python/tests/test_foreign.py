"""Memory gpumem did not make (0.5): pointer_info's vendor_known, PhysicalMemory.retain and
properties, and the devices' PCI address, UUID and NUMA node (gpumem/_debug.py, _vmm.py,
_devices.py)."""
import ctypes
import unittest

import gpumem

from support import GpumemTestCase


class TestForeignMemory(GpumemTestCase):
    def test_plain_host_memory_is_unknown_to_every_runtime(self):
        buf = ctypes.create_string_buffer(4096)
        info = gpumem.pointer_info(ctypes.addressof(buf) + 8)
        self.assertEqual(info.kind, "unknown")
        self.assertFalse(info.vendor_known)
        self.assertEqual(info.memory, gpumem.POOL_MEMORY_UNKNOWN)

    def test_own_memory_is_gpumem_s_to_describe(self):
        with gpumem.malloc(1 << 16) as m:
            info = gpumem.pointer_info(m.ptr + 100)
            self.assertEqual(info.kind, "device")
            self.assertFalse(info.vendor_known)

    def test_device_identity(self):
        info = gpumem.device_info(0)
        self.assertEqual(len(info.uuid), 16)
        if info.backend == "host":
            self.assertEqual(info.pci_bus_id, "")
            self.assertEqual(info.numa_node, -1)
        else:
            self.assertRegex(info.pci_bus_id, r"^[0-9a-f]+:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$")

    def test_retain_and_properties(self):
        if gpumem.device_info(0).virtual_memory != gpumem.SUPPORT_NATIVE:
            self.skipTest("no native VMM")
        g = gpumem.mem_granularity()
        with gpumem.AddressRange(2 * g) as r, gpumem.PhysicalMemory(g) as m:
            r.map(m)
            with gpumem.PhysicalMemory.retain(r.ptr + g // 2) as again:
                self.assertNotEqual(again.handle, m.handle)
                self.assertEqual(again.size, g)
                self.assertEqual(again.properties(), m.properties())
                self.assertEqual(again.properties()["device"], 0)
            with self.assertRaises(gpumem.GpumemError) as caught:
                gpumem.PhysicalMemory.retain(r.ptr + g)
            self.assertEqual(caught.exception.status, gpumem.ERROR_INVALID_VALUE)
            r.unmap()


if __name__ == "__main__":
    unittest.main()
