"""CuPy allocator (against a stand-in cupy module), the PyTorch hook path, __cuda_array_interface__."""
import ctypes
import gc
import os
import sys
import types
import unittest

import gpumem
from gpumem import _cupy, _torch, _views

from support import GpumemTestCase


def fake_cupy():
    """Just what gpumem's CuPy hooks touch, with CuPy's semantics: CFunctionAllocator calls the C
    malloc with (param, size, device), does not look at a NULL result, and calls the C free with
    (param, ptr, device) when the memory is dropped."""
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id=-1):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    class Stream:
        def __init__(self, ptr=0):
            self.ptr = ptr

    malloc_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    free_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)

    class CFunctionAllocatorMemory:
        def __init__(self, size, param, malloc_func, free_func, device_id):
            self.size, self.param, self.free_func, self.device_id = size, param, free_func, device_id
            self.ptr = (malloc_type(malloc_func)(param, size, device_id) or 0) if size else 0

        def __del__(self):
            if self.ptr:
                free_type(self.free_func)(self.param, self.ptr, self.device_id)

    class CFunctionAllocator:
        def __init__(self, param, malloc_func, free_func, owner):
            self.param, self.malloc_func, self.free_func, self.owner = param, malloc_func, free_func, owner

        def malloc(self, size):
            return MemoryPointer(CFunctionAllocatorMemory(size, self.param, self.malloc_func, self.free_func,
                                                          cuda.runtime.getDevice()), 0)

    current = [Stream()]
    cuda.UnownedMemory = UnownedMemory
    cuda.MemoryPointer = MemoryPointer
    cuda.Stream = Stream
    cuda.memory = types.SimpleNamespace(CFunctionAllocator=CFunctionAllocator)
    cuda.get_current_stream = lambda: current[0]
    cuda.set_current_stream = lambda s: current.__setitem__(0, s)
    cuda.runtime = types.SimpleNamespace(getDevice=lambda: 0)
    cupy.cuda = cuda
    return cupy


class FakeCupy:
    """sys.modules["cupy"] is the stand-in inside the block; gpumem's cached module is reset."""

    def __enter__(self):
        self.saved = sys.modules.get("cupy")
        self.cupy = sys.modules["cupy"] = fake_cupy()
        _cupy._cupy_cuda.clear()
        return self.cupy

    def __exit__(self, *exc):
        _cupy._cupy_cuda.clear()
        if self.saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = self.saved


def fake_torch():
    """Just what gpumem.torch_mem_pool touches, with PyTorch 2.x's semantics: CUDAPluggableAllocator
    loads the named C functions from the library at `path`; MemPool takes its .allocator() and
    asks it for segments with (size, device, stream).  segment() stands in for the caching
    allocator asking for one."""
    torch = types.ModuleType("torch")
    cuda = types.ModuleType("torch.cuda")
    memory = types.ModuleType("torch.cuda.memory")
    malloc_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
    free_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
    devices = []  # the devices torch.cuda.device() made current, in order

    class CUDAPluggableAllocator:
        def __init__(self, path, alloc_fn_name, free_fn_name):
            lib = ctypes.CDLL(path)
            self.names = (path, alloc_fn_name, free_fn_name)
            self.malloc = malloc_type(ctypes.cast(getattr(lib, alloc_fn_name), ctypes.c_void_p).value)
            self.free = free_type(ctypes.cast(getattr(lib, free_fn_name), ctypes.c_void_p).value)

        def allocator(self):
            return types.SimpleNamespace(owner=self)

    class MemPool:
        def __init__(self, allocator=None, use_on_oom=False):
            self.allocator, self.device = allocator, devices[-1] if devices else 0

        def segment(self, size):
            return self.allocator.owner.malloc(size, self.device, None) or 0

        def release(self, ptr, size):
            self.allocator.owner.free(ptr, size, self.device, None)

    class device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            devices.append(self.index)

        def __exit__(self, *exc):
            pass

    memory.CUDAPluggableAllocator, memory.MemPool = CUDAPluggableAllocator, MemPool
    cuda.memory, cuda.device, cuda.current_device = memory, device, lambda: 0
    cuda.devices_entered = devices
    torch.cuda = cuda
    return torch


class FakeTorch:
    """sys.modules["torch"] is the stand-in inside the block."""

    def __init__(self, torch=None):
        self.torch = torch

    def __enter__(self):
        self.saved = sys.modules.get("torch")
        sys.modules["torch"] = self.torch = self.torch if self.torch is not None else fake_torch()
        return self.torch

    def __exit__(self, *exc):
        if self.saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved


class TestTorchMemPool(GpumemTestCase):
    def test_arguments_are_checked_before_torch(self):
        """Bad arguments are refused first, with torch absent too (sys.modules entry None)."""
        with FakeTorch(torch=None):
            sys.modules["torch"] = None  # import torch raises ImportError
            for bad in ("pool", 3, object()):
                with self.assertRaises(TypeError):
                    gpumem.torch_mem_pool(pool=bad)
            for bad, err in ((-1, ValueError), ("cpu", ValueError), ("cuda:x", ValueError), (True, TypeError),
                             (1.5, TypeError), (types.SimpleNamespace(type="cpu", index=None), ValueError)):
                with self.assertRaises(err, msg=repr(bad)):
                    gpumem.torch_mem_pool(device=bad)
            pool = gpumem.Pool()
            pool.close()
            with self.assertRaises(gpumem.GpumemError):
                gpumem.torch_mem_pool(pool=pool)
            with self.assertRaises(ImportError) as cm:
                gpumem.torch_mem_pool()
            self.assertIn("PyTorch", str(cm.exception))

    def test_device_forms(self):
        self.assertIsNone(_torch._torch_device_index(None))
        self.assertIsNone(_torch._torch_device_index("cuda"))
        self.assertEqual(_torch._torch_device_index("cuda:2"), 2)
        self.assertEqual(_torch._torch_device_index(types.SimpleNamespace(type="cuda", index=1)), 1)
        self.assertEqual(_torch._torch_device_index(0), 0)

    def test_a_torch_without_mempool_is_refused(self):
        torch = fake_torch()
        del torch.cuda.memory.MemPool
        with FakeTorch(torch):
            with self.assertRaises(RuntimeError) as cm:
                gpumem.torch_mem_pool()
            self.assertIn("use_torch_allocator", str(cm.exception))

    def test_segments_come_from_the_current_pool(self):
        with FakeTorch() as torch:
            mp = gpumem.torch_mem_pool()
            path, malloc, free = mp.allocator.owner.names
            self.assertEqual((malloc, free), ("gpumem_pluggable_malloc", "gpumem_pluggable_free"))
            self.assertEqual(path, gpumem.torch_allocator_path())
            self.assertEqual(torch.cuda.devices_entered, [0])
            p = mp.segment(1 << 20)
            self.assertTrue(p)
            info = gpumem.pointer_info(p)
            self.assertEqual((info.kind, info.alloc_size), ("stream_ordered", 1 << 20))
            self.assertEqual(info.pool, gpumem.Pool.current(0).handle)
            mp.release(p, 1 << 20)
            self.assertEqual(gpumem.pointer_info(p).kind, "unknown")

    def test_a_pool_is_routed_as_the_current_pool(self):
        default = gpumem.Pool.current(0)
        with FakeTorch(), gpumem.Pool() as pool:
            try:
                mp = gpumem.torch_mem_pool(pool=pool, device="cuda:0")
                self.assertIs(mp._gpumem_pool, pool)
                self.assertEqual(gpumem.Pool.current(0).handle, pool.handle)
                p = mp.segment(4096)
                self.assertTrue(p)
                self.assertEqual(gpumem.pointer_info(p).pool, pool.handle)
                mp.release(p, 4096)
            finally:
                default.make_current(0)

    def test_an_rdma_pool(self):
        """POOL_RDMA where the device has it (the host backend: ordinary host memory)."""
        info = gpumem.device_info(0)
        if info.rdma_memory == gpumem.SUPPORT_NONE:
            self.assertStatus(gpumem.ERROR_NOT_SUPPORTED, gpumem.Pool, flags=gpumem.POOL_RDMA)
            return
        default = gpumem.Pool.current(0)
        with FakeTorch(), gpumem.Pool(flags=gpumem.POOL_RDMA) as pool:
            try:
                mp = gpumem.torch_mem_pool(pool=pool, device=0)
                p = mp.segment(2 << 20)
                self.assertTrue(p)
                gpumem.memcpy(p, b"rdma", 4)
                out = bytearray(4)
                gpumem.memcpy(out, p, 4)
                self.assertEqual(out, b"rdma")
                mp.release(p, 2 << 20)
            finally:
                default.make_current(0)

    def test_unknown_pool_flags_are_refused(self):
        e = self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.Pool, flags=0x2)
        self.assertIn("unknown bits", e.message)


class TestTorchHook(GpumemTestCase):
    def test_the_process_wide_hook_throws(self):
        """use_torch_allocator gives PyTorch the hook that throws on failure (PyTorch does not check
        for NULL), and the free that goes with it; both are exported by the library."""
        torch = fake_torch()
        chosen = []
        torch.cuda.memory.change_current_allocator = chosen.append
        with FakeTorch(torch):
            alloc = gpumem.use_torch_allocator()
        self.assertEqual(chosen, [alloc])
        self.assertEqual(alloc.names, (gpumem.torch_allocator_path(), "gpumem_pluggable_malloc_or_throw",
                                       "gpumem_pluggable_free"))


class TestFrameworks(GpumemTestCase):
    def test_cupy_allocator(self):
        with FakeCupy() as cupy:
            before = gpumem.stats()
            mp = gpumem.cupy_allocator(1 << 20)
            self.assertNotEqual(mp.ptr, 0)
            info = gpumem.pointer_info(mp.ptr)
            self.assertEqual(info.kind, "stream_ordered")
            self.assertEqual(info.alloc_size, 1 << 20)
            gpumem.memcpy(mp.ptr, b"cupy", 4)
            ptr = mp.ptr
            del mp, info
            gc.collect()
            self.assertEqual(gpumem.pointer_info(ptr).kind, "unknown")
            after = gpumem.stats()
            self.assertEqual(after.alloc_count["stream_ordered"] - before.alloc_count["stream_ordered"], 1)
            self.assertEqual(after.free_count["stream_ordered"] - before.free_count["stream_ordered"], 1)
            self.assertEqual(gpumem.cupy_allocator(0).ptr, 0)

    def test_cupy_allocator_follows_the_current_stream(self):
        """Each CuPy stream gets its own C allocator, with that stream's handle, built once."""
        with FakeCupy() as cupy, gpumem.Stream() as s:
            default = cupy.cuda.get_current_stream()
            a = gpumem.cupy_allocator(4096)
            self.assertEqual(a.mem.param, 0)
            theirs = cupy.cuda.Stream(s.native)
            cupy.cuda.set_current_stream(theirs)
            b = gpumem.cupy_allocator(4096)
            c = gpumem.cupy_allocator(8192)
            self.assertEqual((b.mem.param, c.mem.param), (s.native, s.native))
            self.assertIs(theirs._gpumem_malloc, theirs._gpumem_malloc)
            self.assertIsNot(theirs._gpumem_malloc, default._gpumem_malloc)
            for mp in (b, c):
                self.assertEqual(gpumem.pointer_info(mp.ptr).kind, "stream_ordered")
            ptrs = [a.ptr, b.ptr, c.ptr]
            del a, b, c, mp
            gc.collect()
            s.synchronize()
            for p in ptrs:
                self.assertEqual(gpumem.pointer_info(p).kind, "unknown")

    def test_cupy_allocator_failure_raises(self):
        """CuPy would turn a NULL into an array at address 0: the hook raises instead."""
        with FakeCupy():
            with self.assertRaises(gpumem.GpumemError) as cm:
                gpumem.cupy_allocator(1 << 62)
            self.assertIn("bytes", cm.exception.message)
            with self.assertRaises(gpumem.GpumemError):
                gpumem.cupy_c_allocator().malloc(1 << 62)

    def test_cupy_c_allocator(self):
        """A fixed stream, whatever CuPy's current one is; the C functions with CuPy's signatures."""
        with FakeCupy() as cupy, gpumem.Stream() as s:
            alloc = gpumem.cupy_c_allocator()
            self.assertEqual(alloc.param, 0)
            before = gpumem.stats()
            cupy.cuda.set_current_stream(cupy.cuda.Stream(s.native))
            mp = alloc.malloc(1 << 16)
            self.assertEqual(mp.mem.param, 0)
            info = gpumem.pointer_info(mp.ptr)
            self.assertEqual((info.kind, info.alloc_size), ("stream_ordered", 1 << 16))
            p = mp.ptr
            del mp
            gc.collect()
            self.assertEqual(gpumem.pointer_info(p).kind, "unknown")
            after = gpumem.stats()
            self.assertEqual(after.free_count["stream_ordered"] - before.free_count["stream_ordered"], 1)
            self.assertEqual(gpumem.cupy_c_allocator(s.native).param, s.native)

    def test_torch_allocator_path(self):
        path = gpumem.torch_allocator_path()
        self.assertTrue(os.path.isabs(path) and os.path.isfile(path), path)
        again = ctypes.CDLL(path)  # what CUDAPluggableAllocator does: the same loaded library
        self.assertEqual(ctypes.cast(again.gpumem_pluggable_malloc, ctypes.c_void_p).value,
                         ctypes.cast(gpumem.lib.gpumem_pluggable_malloc, ctypes.c_void_p).value)
        p = gpumem.lib.gpumem_pluggable_malloc(4096, 0, None)
        self.assertTrue(p)
        self.assertEqual(gpumem.pointer_info(p).kind, "stream_ordered")
        gpumem.lib.gpumem_pluggable_free(p, 4096, 0, None)
        self.assertEqual(gpumem.pointer_info(p).kind, "unknown")
        self.assertIsNone(gpumem.lib.gpumem_pluggable_malloc(-1, 0, None))
        self.assertTrue(gpumem.lib.gpumem_last_error_message())

    def test_cuda_array_interface(self):
        with gpumem.malloc(4096) as d:
            with self.assertRaises(ValueError):
                d.as_cuda_array("float32")  # host backend
            v = gpumem.CudaArrayView(d, d.ptr, (32, 32), "<f4")
            self.assertEqual(v.__cuda_array_interface__, {"shape": (32, 32), "typestr": "<f4",
                                                          "data": (d.ptr, False), "version": 3, "strides": None})
            self.assertEqual(_views._typestr("float64"), "<f8")
            self.assertEqual(gpumem._entry.shape("as_array", None, 4096, 8), (512,))
            with self.assertRaises(ValueError):
                gpumem._entry.shape("as_array", (33, 32), 4096, 4)
            # memcpy accepts __cuda_array_interface__ objects
            gpumem.memcpy(v, b"\x01" * 4096)
            out = bytearray(4096)
            gpumem.memcpy(out, v)
            self.assertEqual(out, b"\x01" * 4096)


if __name__ == "__main__":
    unittest.main()
