"""Every use of a closed object raises GpumemError (never a crash, never a silent success):
each public method and property of each object type, the array protocols, and the module's
functions given a closed object."""
import inspect
import socket
import unittest

import gpumem

from support import DISABLED, GpumemTestCase

# Plain data that stays readable after close (no call into the library, no memory touched).
DATA = {"ptr", "size", "handle", "kind", "kind_code", "stream", "device", "owned", "closed",
        "typestr", "shape", "nbytes", "owner"}
# Methods whose job is to end the object: a second call does nothing.
ENDERS = {"close", "free"}
PROTOCOLS = ["__dlpack__", "__dlpack_device__", "__array_interface__", "__bytes__", "__buffer__"]


def args_for(obj, name, live):
    """Plausible arguments for obj.name(...), so that only the closed object can be at fault."""
    if isinstance(obj, gpumem.AddressRange):
        table = {"map": (live.get("phys"),), "set_access": (0, 16, [(0, gpumem.ACCESS_READWRITE)]),
                 "unmap": (0, 16)}
    elif isinstance(obj, gpumem.Pool):
        table = {"set_access": ([(0, gpumem.ACCESS_READWRITE)],), "malloc": (16,),
                 "import_pointer": (bytes(64), 16)}
    elif isinstance(obj, gpumem.Stream):
        table = {"wait_event": (live["event"],), "record": (live["event"],)}
    else:
        table = {}
    common = {"elapsed_ms": (live["event"],), "record": (), "resize": (64,), "memset": (0,),
              "copy_from": (bytes(16),), "copy_to": (bytearray(16),), "prefetch": (gpumem.DEVICE_HOST,),
              "advise": (gpumem.ADVISE_SET_READ_MOSTLY,), "range_attribute": (gpumem.RANGE_READ_MOSTLY,),
              "__buffer__": (0,)}
    return table.get(name, common.get(name, ()))


def closed_objects():
    """(label, factory) for every object type the package hands out."""
    return [
        ("Allocation device", lambda: gpumem.malloc(64)),
        ("Allocation host_pinned", lambda: gpumem.host_alloc(64)),
        ("Allocation managed", lambda: gpumem.managed_alloc(64)),
        ("Allocation stream_ordered", lambda: gpumem.malloc_async(64)),
        ("Stream", gpumem.Stream),
        ("Event", gpumem.Event),
        ("Pool", gpumem.Pool),
        ("Buffer", lambda: gpumem.Buffer(64)),
        ("HostRegistration", lambda: gpumem.HostRegistration(bytearray(4096))),
    ] + ([] if "vmm" in DISABLED else [
        ("PhysicalMemory", lambda: gpumem.PhysicalMemory(gpumem.mem_granularity())),
        ("AddressRange", lambda: gpumem.AddressRange(gpumem.mem_granularity())),
    ])


class TestUseAfterClose(GpumemTestCase):
    def setUp(self):
        self.live = {"event": gpumem.Event()}
        if "vmm" not in DISABLED:
            self.live["phys"] = gpumem.PhysicalMemory(gpumem.mem_granularity())

    def tearDown(self):
        for o in self.live.values():
            o.close()

    def check_object(self, label, obj):
        cls = type(obj)
        names = [n for n in dir(obj) if not n.startswith("_")] + [p for p in PROTOCOLS if hasattr(cls, p)]
        for name in names:
            static = inspect.getattr_static(obj, name)
            if name in DATA or isinstance(static, (classmethod, staticmethod)):
                continue
            with self.subTest(obj=label, name=name):
                if isinstance(static, property):
                    with self.assertRaises(gpumem.GpumemError, msg="%s.%s read after close" % (label, name)):
                        getattr(obj, name)
                    continue
                attr = getattr(obj, name)
                if not callable(attr):
                    continue
                if name in ENDERS:
                    attr()  # a second close does nothing
                    continue
                with self.assertRaises(gpumem.GpumemError, msg="%s.%s() after close" % (label, name)):
                    attr(*args_for(obj, name, self.live))

    def test_every_method_of_every_object(self):
        for label, make in closed_objects():
            obj = make()
            view = obj.as_array("uint8") if hasattr(obj, "as_array") else None
            obj.close()
            self.assertTrue(obj.closed, label)
            self.check_object(label, obj)
            if view is not None:
                self.check_object(label + " ArrayView", view)

    def test_module_functions_given_closed_objects(self):
        d = gpumem.malloc(64)
        s = gpumem.Stream()
        e = gpumem.Event()
        p = gpumem.Pool()
        d.close(), s.close(), e.close(), p.close()
        live = gpumem.malloc(64)
        calls = [
            ("memcpy to", gpumem.memcpy, (d, bytes(8)), {}),
            ("memcpy from", gpumem.memcpy, (bytearray(8), d), {}),
            ("memcpy_async", gpumem.memcpy_async, (d, bytes(8)), {}),
            ("memcpy_async closed stream", gpumem.memcpy_async, (live, bytes(8)), {"stream": s}),
            ("memset", gpumem.memset, (d, 0), {}),
            ("memset_async", gpumem.memset_async, (d, 0), {}),
            ("pointer_info", gpumem.pointer_info, (d,), {}),
            ("prefetch", gpumem.prefetch, (d, gpumem.DEVICE_HOST), {}),
            ("advise", gpumem.advise, (d, gpumem.ADVISE_SET_READ_MOSTLY), {}),
            ("range_attribute", gpumem.range_attribute, (d, gpumem.RANGE_READ_MOSTLY), {}),
            ("range_attributes", gpumem.range_attributes, (d, [gpumem.RANGE_READ_MOSTLY]), {}),
            ("stream_attach", gpumem.stream_attach, (None, d), {}),
            ("host_get_device_pointer", gpumem.host_get_device_pointer, (d,), {}),
            ("elapsed_ms", gpumem.elapsed_ms, (e, e), {}),
            ("malloc_async closed stream", gpumem.malloc_async, (16,), {"stream": s}),
            ("malloc_async closed pool", gpumem.malloc_async, (16,), {"pool": p}),
            ("Pool.export_pointer", gpumem.Pool.export_pointer, (d,), {}),
        ]
        a, b = socket.socketpair()
        a.close()
        calls.append(("ipc_send_fd closed socket", gpumem.ipc_send_fd, (b.fileno() + 1000, 0), {}))
        b.close()
        for label, fn, args, kw in calls:
            with self.subTest(call=label):
                with self.assertRaises(gpumem.GpumemError):
                    fn(*args, **kw)
        live.close()


if __name__ == "__main__":
    unittest.main()
