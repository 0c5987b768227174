"""CuPy allocator (against a stand-in cupy module), the PyTorch hook path, __cuda_array_interface__."""
import ctypes
import gc
import os
import sys
import types
import unittest

import gpumem

from support import GpumemTestCase


def fake_cupy():
    """Just what gpumem.cupy_allocator touches, with CuPy's semantics for the owner."""
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id=-1):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    class Stream:
        ptr = 0
    class CFunctionAllocator:  # keeps what CuPy's keeps: param, two C function addresses, owner
        def __init__(self, param, malloc_func, free_func, owner):
            self.param, self.malloc_func, self.free_func, self.owner = param, malloc_func, free_func, owner
    cuda.UnownedMemory = UnownedMemory
    cuda.MemoryPointer = MemoryPointer
    cuda.memory = types.SimpleNamespace(CFunctionAllocator=CFunctionAllocator)
    cuda.get_current_stream = lambda: Stream()
    cuda.runtime = types.SimpleNamespace(getDevice=lambda: 0)
    cupy.cuda = cuda
    return cupy


class TestFrameworks(GpumemTestCase):
    def test_cupy_allocator(self):
        saved = sys.modules.get("cupy")
        sys.modules["cupy"] = fake_cupy()
        try:
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
        finally:
            if saved is None:
                sys.modules.pop("cupy", None)
            else:
                sys.modules["cupy"] = saved

    def test_cupy_c_allocator(self):
        """The C functions CuPy's CFunctionAllocator calls, with CuPy's signatures."""
        saved = sys.modules.get("cupy")
        sys.modules["cupy"] = fake_cupy()
        try:
            alloc = gpumem.cupy_c_allocator()
            self.assertEqual(alloc.param, 0)
            malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)(alloc.malloc_func)
            free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(alloc.free_func)
            before = gpumem.stats()
            p = malloc(alloc.param, 1 << 16, 0)
            self.assertTrue(p)
            info = gpumem.pointer_info(p)
            self.assertEqual((info.kind, info.alloc_size), ("stream_ordered", 1 << 16))
            free(alloc.param, p, 0)
            self.assertEqual(gpumem.pointer_info(p).kind, "unknown")
            after = gpumem.stats()
            self.assertEqual(after.free_count["stream_ordered"] - before.free_count["stream_ordered"], 1)
            self.assertIsNone(malloc(alloc.param, 1 << 62, 0))  # too large: NULL and a message
            self.assertIn(b"bytes", gpumem.lib.gpumem_last_error_message())
            with gpumem.Stream() as s:
                self.assertEqual(gpumem.cupy_c_allocator(s.native).param, s.native)
        finally:
            if saved is None:
                sys.modules.pop("cupy", None)
            else:
                sys.modules["cupy"] = saved

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
            self.assertEqual(gpumem._typestr("float64"), "<f8")
            self.assertEqual(gpumem._shape(None, 4096, 8), (512,))
            with self.assertRaises(ValueError):
                gpumem._shape((33, 32), 4096, 4)
            # memcpy accepts __cuda_array_interface__ objects
            gpumem.memcpy(v, b"\x01" * 4096)
            out = bytearray(4096)
            gpumem.memcpy(out, v)
            self.assertEqual(out, b"\x01" * 4096)


if __name__ == "__main__":
    unittest.main()
