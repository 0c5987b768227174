"""The bindings against the header: every function, every constant, every struct layout."""
import ctypes
import re
import unittest

import gpumem
from gpumem import _lib

from support import source_file

HEADER = ("include", "gpumem", "gpumem.h")


class TestAbi(unittest.TestCase):
    def test_every_header_function_has_a_prototype(self):
        header = source_file(*HEADER)
        names = re.findall(r"GPUMEM_API\b[^;(]*?\b(gpumem_\w+)\s*\(", header)
        self.assertGreater(len(names), 80)
        self.assertTrue(set(_lib.CXX_ONLY_FUNCTIONS) <= set(names), "a C++-only function not in the header")
        names = [n for n in names if n not in _lib.CXX_ONLY_FUNCTIONS]
        bound = [p[0] for p in _lib.PROTOTYPES]
        self.assertEqual(len(bound), len(set(bound)), "a prototype is listed twice")
        self.assertEqual(sorted(set(names) - set(bound)), [], "functions of the header without a prototype")
        self.assertEqual(sorted(set(bound) - set(names)), [], "prototypes of functions not in the header")
        for name, restype, argtypes in _lib.PROTOTYPES:
            f = getattr(gpumem.lib, name)
            self.assertEqual(f.restype, restype, name)
            self.assertEqual(f.argtypes, argtypes, name)

    def test_argument_and_return_types_match_the_header(self):
        header = re.sub(r"/\*.*?\*/", "", source_file(*HEADER), flags=re.S)
        protos = {p[0]: p for p in _lib.PROTOTYPES}
        handles = ("gpumem_stream_t", "gpumem_event_t", "gpumem_pool_t", "gpumem_buffer_t")
        scalars = {"size_t": ctypes.c_size_t, "ssize_t": ctypes.c_ssize_t, "int32_t": ctypes.c_int32,
                   "int": ctypes.c_int, "gpumem_status_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32,
                   "uint64_t": ctypes.c_uint64, "gpumem_mem_handle_t": ctypes.c_uint64,
                   "gpumem_trace_fn": _lib.TRACE_FN, "gpumem_host_fn_t": _lib.HOST_FN}

        def check(ctype, cdecl, what):
            cdecl = cdecl.replace("const ", "").strip()
            if "*" in cdecl:
                self.assertTrue(ctype in (ctypes.c_void_p, ctypes.c_char_p) or issubclass(ctype, ctypes._Pointer),
                                "%s: %s is a pointer, bound as %r" % (what, cdecl, ctype))
                base = cdecl.replace("*", "").strip()
                if issubclass(ctype, ctypes._Pointer) and base in scalars:
                    self.assertIs(ctype._type_, scalars[base], what)
            elif cdecl in handles:
                self.assertIs(ctype, ctypes.c_void_p, what)
            elif cdecl == "void":
                self.assertIsNone(ctype, what)
            else:
                self.assertIn(cdecl, scalars, what)
                self.assertIs(ctype, scalars[cdecl], "%s: %s" % (what, cdecl))

        n = 0
        for m in re.finditer(r"GPUMEM_API\s+([^;(]*?)\b(gpumem_\w+)\s*\(([^)]*)\)\s*;", header):
            ret, name, args = m.group(1), m.group(2), m.group(3).strip()
            if name in _lib.CXX_ONLY_FUNCTIONS:
                continue
            params = [] if args in ("", "void") else [a.strip() for a in args.split(",")]
            self.assertEqual(len(protos[name][2]), len(params), name)
            check(protos[name][1], ret, name + " return")
            for i, (ctype, p) in enumerate(zip(protos[name][2], params)):
                decl = re.sub(r"\b\w+$", "", p) if not p.endswith("*") else p
                check(ctype, decl, "%s argument %d (%s)" % (name, i, p))
            n += 1
        self.assertEqual(n, len(protos))

    def test_every_constant(self):
        header = source_file(*HEADER)
        seen = 0
        for name, value in re.findall(r"^#define GPUMEM_(\w+)\s+\(?(-?(?:0x[0-9a-fA-F]+|\d+))\)?\s*(?:/\*.*)?$",
                                      header, flags=re.M):
            if name.startswith(("VERSION", "GPUMEM_H")):
                continue
            self.assertTrue(hasattr(gpumem, name), "GPUMEM_%s missing from the bindings" % name)
            self.assertEqual(getattr(gpumem, name), int(value, 0), "GPUMEM_" + name)
            seen += 1
        self.assertGreater(seen, 70)

    def test_struct_layouts_match_tests_abi_layout_c(self):
        layout = source_file("tests", "abi", "layout.c")
        structs = {
            "gpumem_device_info_t": _lib.DeviceInfo, "gpumem_pointer_info_t": _lib.PointerInfo,
            "gpumem_stats_t": _lib.Stats, "gpumem_trace_event_t": _lib.TraceEvent,
            "gpumem_pool_props_t": _lib.PoolProps, "gpumem_access_desc_t": _lib.AccessDesc,
            "gpumem_pool_ptr_export_data_t": _lib.PoolPtrExportData, "gpumem_alloc_props_t": _lib.AllocProps,
            "gpumem_status_t": _lib.status_t, "gpumem_mem_handle_t": _lib.mem_handle_t,
            "gpumem_stream_t": _lib.stream_t,
            "gpumem_snapshot_free_block_t": _lib.SnapshotFreeBlock, "gpumem_snapshot_device_t": _lib.SnapshotDevice,
            "gpumem_snapshot_pool_t": _lib.SnapshotPool, "gpumem_snapshot_allocation_t": _lib.SnapshotAllocation,
            "gpumem_snapshot_segment_t": _lib.SnapshotSegment, "gpumem_snapshot_t": _lib.Snapshot,
            "gpumem_oom_remedy_t": _lib.OomRemedy, "gpumem_oom_report_t": _lib.OomReport,
            "gpumem_ipc_event_handle_t": _lib.IpcEventHandle, "gpumem_memcpy3d_t": _lib.Memcpy3D,
        }
        sizes = re.findall(r"SIZE\((\w+), (\d+)\)", layout)
        self.assertGreater(len(sizes), 10)
        for cname, size in sizes:
            self.assertIn(cname, structs, "layout.c checks %s: add it to the bindings" % cname)
            self.assertEqual(ctypes.sizeof(structs[cname]), int(size), "sizeof(%s)" % cname)
        offs = re.findall(r"OFF\((\w+), (\w+), (\d+)\)", layout)
        self.assertGreater(len(offs), 40)
        for cname, field, off in offs:
            self.assertEqual(getattr(structs[cname], field).offset, int(off), "offsetof(%s, %s)" % (cname, field))
        for name, value in re.findall(r"VAL\(GPUMEM_(\w+), (-?(?:0x[0-9a-fA-F]+|\d+))\)", layout):
            self.assertEqual(getattr(gpumem, name), int(value, 0), name)

    def test_version(self):
        v = gpumem.version()
        self.assertEqual(v[0], _lib.EXPECTED_MAJOR)
        hdr = source_file("include", "gpumem", "gpumem_version.h")
        want = tuple(int(re.search(r"GPUMEM_VERSION_%s (\d+)" % p, hdr).group(1)) for p in ("MAJOR", "MINOR", "PATCH"))
        self.assertEqual(v, want)
        self.assertEqual(_lib.HEADER_VERSION, want[0] * 10000 + want[1] * 100 + want[2])
        self.assertEqual(gpumem.__version__, "%d.%d.%d" % want)


if __name__ == "__main__":
    unittest.main()
