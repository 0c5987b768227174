"""``python -m gpumem [--json]``: gpumem-info's report, for the library this package loaded.

The report is made here, through the C API as ``tools/cli/gpumem-info.c`` makes it, so a wheel (which
bundles libgpumem but not the tool) prints the same as ``gpumem-info`` does: the environment, the
version, the backend, the known vendor bugs worked around, and every device with its memory, the
cap GPUMEM_LIMIT puts on it and the support level of each feature.  ``--json`` prints the one JSON object of
``gpumem-info --json`` (docs/gpumem-info-json.md).  The text report begins with one line more,
``library: PATH``, the libgpumem this package loaded.

The Python tests compare both outputs with the tool's byte for byte, so the two cannot drift.

SPDX-License-Identifier: MIT
"""
import ctypes
import os
import sys

# The variables that shape gpumem's answer, in gpumem-info's order.
ENV_NAMES = (
    "GPUMEM_BACKEND", "GPUMEM_DISABLE", "GPUMEM_FALLBACK", "GPUMEM_LOG",
    "GPUMEM_CUDA_LIBRARY", "GPUMEM_HIP_LIBRARY", "GPUMEM_PINNED_CACHE",
    "GPUMEM_HOST_STRICT",
    "GPUMEM_TRACE", "GPUMEM_TRACE_MAX", "GPUMEM_BACKTRACE", "GPUMEM_LIMIT", "GPUMEM_POOL_PAGED", "GPUMEM_POOL_DECAY",
    "GPUMEM_SELFTEST",
)
MAX_WORKAROUNDS = 32

_PROG = "python -m gpumem"


def _level(level):
    return {3: "broken", 2: "native", 1: "emulated", 0: "none"}.get(level, "unknown")


def _env(name):
    """The variable's bytes, or None: gpumem-info prints the bytes, whatever their encoding."""
    return os.environb.get(name.encode())


def _out(text):
    sys.stdout.buffer.write(text if isinstance(text, bytes) else text.encode("utf-8"))


def _bytes_line(label, value):
    v, u = float(value), 0
    while v >= 1024.0 and u < 4:
        v /= 1024.0
        u += 1
    return "  %-28s %d bytes (%.1f %s)\n" % (label, value, v, ("B", "KiB", "MiB", "GiB", "TiB")[u])


def _c_str(raw):
    """A fixed char array's bytes up to the first NUL."""
    return bytes(raw).split(b"\0", 1)[0]


def json_string(raw):
    """gpumem-info's JSON string of raw bytes: quotes, backslashes and control characters
    escaped, valid UTF-8 passed through, each byte of an invalid sequence U+FFFD."""
    out = bytearray(b'"')
    p, n = 0, len(raw)
    short = {8: b"\\b", 12: b"\\f", 10: b"\\n", 13: b"\\r", 9: b"\\t"}
    while p < n:
        c = raw[p]
        if c in (0x22, 0x5C):
            out += b"\\" + bytes((c,))
            p += 1
        elif c < 0x20 or c == 0x7F:
            out += short.get(c, b"\\u%04x" % c)
            p += 1
        elif c < 0x80:
            out.append(c)
            p += 1
        else:
            k = 4 if 0xF0 <= c <= 0xF4 else 3 if c >= 0xE0 else 2 if 0xC2 <= c <= 0xDF else 0
            if c >= 0xF5:
                k = 0
            cp = c & (0x07 if k == 4 else 0x0F if k == 3 else 0x1F)
            ok = k > 0
            for i in range(1, k):
                if not ok:
                    break
                if p + i >= n or (raw[p + i] & 0xC0) != 0x80:
                    ok = False
                else:
                    cp = (cp << 6) | (raw[p + i] & 0x3F)
            if ok and ((k == 3 and (cp < 0x800 or 0xD800 <= cp <= 0xDFFF)) or
                       (k == 4 and (cp < 0x10000 or cp > 0x10FFFF))):
                ok = False
            if ok:
                out += raw[p:p + k]
                p += k
            else:
                out += b"\\ufffd"
                p += 1
    out += b'"'
    return bytes(out)


class _Failure(Exception):
    def __init__(self, call, status):
        super().__init__(call)
        self.call, self.status = call, status


class _Report:
    """What gpumem-info asks the library, asked through ctypes."""

    def __init__(self):
        from gpumem import _lib
        self._lib = _lib
        self.lib = _lib.lib

    def check(self, call, status):
        if status != 0:
            raise _Failure(call, status)

    def status_name(self, status):
        return self.lib.gpumem_status_string(status).decode()

    def message(self):
        m = self.lib.gpumem_last_error_message()
        return m.decode("utf-8", "replace") if m else ""

    def version(self):
        v = self.lib.gpumem_version()
        return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)

    def compiled(self):
        v = self._lib.HEADER_VERSION
        return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)

    def backend_name(self, code):
        return self.lib.gpumem_backend_name(code).decode()

    def backend_and_count(self):
        b, n = ctypes.c_int32(), ctypes.c_int32()
        self.check("gpumem_get_backend", self.lib.gpumem_get_backend(ctypes.byref(b)))
        self.check("gpumem_device_count", self.lib.gpumem_device_count(ctypes.byref(n)))
        return b.value, n.value

    def device(self, d):
        info = self._lib.init_struct(self._lib.DeviceInfo)
        self.check("gpumem_device_get_info", self.lib.gpumem_device_get_info(d, ctypes.byref(info)))
        return info

    def limit_cap(self, device):
        """gpumem-info's limit_cap(): the cap GPUMEM_LIMIT puts on ``device`` as the library parsed
        it (0: none), which only an out-of-memory report tells (``limit``), so read from the report
        of a 2^63-byte allocation, which a cap (else the driver) refuses at once.  (cap, status)."""
        if not _env("GPUMEM_LIMIT"):    # the library takes an empty value as unset
            return 0, 0
        current = ctypes.c_int32()
        st = self.lib.gpumem_get_device(ctypes.byref(current))
        if st == 0 and current.value != device:
            st = self.lib.gpumem_set_device(device)
        if st != 0:
            return 0, st
        p, cap = ctypes.c_void_p(), 0
        st = self.lib.gpumem_malloc(ctypes.byref(p), (ctypes.c_size_t(-1).value >> 1) + 1)  # SIZE_MAX / 2 + 1
        if st == 0:
            self.lib.gpumem_free(p)
            st = self._lib.ERROR_INVALID_VALUE     # no report to read
        elif st == self._lib.ERROR_OUT_OF_MEMORY:
            report = self._lib.init_struct(self._lib.OomReport)
            st = self.lib.gpumem_last_oom_report(ctypes.byref(report))
            if st == 0:
                cap = report.limit
        if current.value != device:
            self.lib.gpumem_set_device(current.value)
        return cap, st

    def workarounds(self):
        names = (ctypes.c_char_p * MAX_WORKAROUNDS)()
        descriptions = (ctypes.c_char_p * MAX_WORKAROUNDS)()
        count = ctypes.c_size_t()
        if self.lib.gpumem_workarounds_get(names, descriptions, MAX_WORKAROUNDS, ctypes.byref(count)) != 0:
            return []
        return [(names[i], descriptions[i]) for i in range(min(count.value, MAX_WORKAROUNDS))]


def _text(r):
    _out("library: %s\n" % r._lib.LIBRARY_PATH)
    # The environment first: when init fails it is usually the reason.
    _out("environment:\n")
    for name in ENV_NAMES:
        value = _env(name)
        _out(b"  %-22s %s\n" % (name.encode(), value if value is not None else b"(unset)"))
    try:
        r.check("gpumem_init(GPUMEM_BACKEND_AUTO)", r.lib.gpumem_init(r._lib.BACKEND_AUTO))
        backend, count = r.backend_and_count()
    except _Failure as f:
        sys.stdout.flush()
        print("%s: %s failed: %s: %s" % (_PROG, f.call, r.status_name(f.status), r.message()), file=sys.stderr)
        return 1
    _out("gpumem %s (compiled against %s)\n" % (r.version(), r.compiled()))
    _out("backend: %s\n" % r.backend_name(backend))
    wa = r.workarounds()
    _out("workarounds of known vendor bugs: %s\n" % ("" if wa else "none"))
    for name, description in wa:
        _out(b"  %s: %s\n" % (name, description))
    _out("devices: %d\n" % count)
    for d in range(count):
        try:
            i = r.device(d)
        except _Failure as f:
            sys.stdout.flush()
            print("%s: %s failed: %s: %s" % (_PROG, f.call, r.status_name(f.status), r.message()),
                  file=sys.stderr)
            return 1
        _out(b"\ndevice %d: %s\n" % (d, _c_str(i.name)))
        _out("  %-28s %s\n" % ("backend", r.backend_name(i.backend)))
        arch = _c_str(i.arch_name)
        _out(b"  %-28s %s\n" % (b"architecture", arch if arch else b"(unknown)"))
        if i.compute_capability:
            _out("  %-28s %d.%d\n" % ("compute capability", i.compute_capability // 10, i.compute_capability % 10))
        _out(_bytes_line("total memory", i.total_memory))
        _out(_bytes_line("free memory", i.free_memory))
        if _env("GPUMEM_LIMIT"):
            cap, st = r.limit_cap(d)
            if st != 0:
                _out("  %-28s unknown: asking for it failed: %s: %s\n" % ("limit (GPUMEM_LIMIT)", r.status_name(st),
                                                                         r.message()))
            elif cap:
                _out(_bytes_line("limit (GPUMEM_LIMIT)", cap))
            else:
                _out("  %-28s none: gpumem did not take the value (its warning says why)\n" % "limit (GPUMEM_LIMIT)")
        _out("  capabilities:\n")
        rows = [
            ("managed memory", _level(i.managed_memory)),
            ("managed pages migrate", "yes" if i.managed_migrates else "no"),
            ("pageable memory access", "yes" if i.pageable_memory_access else "no"),
            ("memory pools", _level(i.memory_pools)),
            ("pools of pinned memory", _level(i.pinned_pools)),
            ("pools of managed memory", _level(i.managed_pools)),
            ("virtual memory (VMM)", _level(i.virtual_memory)),
            ("host register", _level(i.host_register)),
            ("batched copies (0.2)", _level(i.batch_memops)),
            ("RDMA-capable memory (0.4)", _level(i.rdma_memory)),
            ("dma-buf export (0.4)", _level(i.dmabuf)),
            ("fabric handles (0.4)", _level(i.fabric_handles)),
            ("rows and boxes (0.5)", _level(i.rows)),
            ("stream priorities (0.5)", _level(i.stream_priorities)),
            ("host functions (0.5)", _level(i.host_funcs)),
            ("IPC events (0.5)", _level(i.ipc_events)),
            ("IPC handle types (VMM)", "posix_fd" if i.ipc_handle_types & r._lib.HANDLE_POSIX_FD else "none"),
            ("IPC handle types (pools)",
             "posix_fd" if i.pool_ipc_handle_types & r._lib.HANDLE_POSIX_FD else "none"),
        ]
        for label, value in rows:
            _out("    %-26s %s\n" % (label, value))
        if i.virtual_memory != r._lib.SUPPORT_NONE:
            _out(_bytes_line("  VMM granularity (min)", i.vmm_granularity))
            _out(_bytes_line("  VMM granularity (recomm.)", i.vmm_recommended_granularity))
        else:
            _out("    %-26s %s\n" % ("VMM granularity", "n/a (no VMM)"))
    r.lib.gpumem_finalize()
    return 0


def _json(r):
    def q(s):
        return json_string(s if isinstance(s, bytes) else s.encode())

    def handle_types(mask):
        return b'["posix_fd"]' if mask & r._lib.HANDLE_POSIX_FD else b"[]"

    try:
        r.check("gpumem_init", r.lib.gpumem_init(r._lib.BACKEND_AUTO))
        backend, count = r.backend_and_count()
        infos = [r.device(d) for d in range(count)]  # a failure prints the error object alone
        caps = [r.limit_cap(d) for d in range(count)]
    except _Failure as f:
        _out(b'{"error": {"status": %s, "code": %d, "call": %s, "message": %s}}\n'
             % (q(r.status_name(f.status)), f.status, q(f.call), q(r.message().encode("utf-8", "replace"))))
        return 1
    lines = [b'{\n  "schema_version": 1,\n',
             b'  "gpumem_version": "%s",\n' % r.version().encode(),
             b'  "gpumem_version_compiled": "%s",\n' % r.compiled().encode(),
             b'  "backend": %s,\n  "devices": [' % q(r.backend_name(backend))]
    for d, i in enumerate(infos):
        cc = b'"%d.%d"' % (i.compute_capability // 10, i.compute_capability % 10) if i.compute_capability else b"null"
        lines.append(
            b'%s\n    {"id": %d, "name": %s, "backend": %s, "arch": %s,\n' % (
                b"," if d else b"", d, q(_c_str(i.name)), q(r.backend_name(i.backend)), q(_c_str(i.arch_name)))
            + b'     "total_memory": %d, "free_memory": %d, "limit": %s,\n' % (
                i.total_memory, i.free_memory, b"%d" % caps[d][0] if caps[d][1] == 0 and caps[d][0] else b"null")
            + b'     "managed_memory": "%s", "managed_migrates": %s, "pageable_memory_access": %s,\n' % (
                _level(i.managed_memory).encode(), b"true" if i.managed_migrates else b"false",
                b"true" if i.pageable_memory_access else b"false")
            + b'     "memory_pools": "%s", "virtual_memory": "%s", "host_register": "%s",\n' % (
                _level(i.memory_pools).encode(), _level(i.virtual_memory).encode(), _level(i.host_register).encode())
            + b'     "pinned_pools": "%s", "managed_pools": "%s",\n' % (
                _level(i.pinned_pools).encode(), _level(i.managed_pools).encode())
            + b'     "ipc_handle_types": %s, "pool_ipc_handle_types": %s,\n' % (
                handle_types(i.ipc_handle_types), handle_types(i.pool_ipc_handle_types))
            + b'     "vmm_granularity": %d, "vmm_recommended_granularity": %d,\n' % (
                i.vmm_granularity, i.vmm_recommended_granularity)
            + b'     "batch_memops": "%s", "rdma_memory": "%s",\n' % (
                _level(i.batch_memops).encode(), _level(i.rdma_memory).encode())
            + b'     "dmabuf": "%s", "fabric_handles": "%s",\n' % (
                _level(i.dmabuf).encode(), _level(i.fabric_handles).encode())
            + b'     "rows": "%s", "stream_priorities": "%s", "host_funcs": "%s", "ipc_events": "%s",\n' % (
                _level(i.rows).encode(), _level(i.stream_priorities).encode(), _level(i.host_funcs).encode(),
                _level(i.ipc_events).encode())
            + b'     "compute_capability": %s}' % cc)
    lines.append(b'%s],\n  "workarounds": [' % (b"\n  " if count else b""))
    wa = r.workarounds()
    for k, (name, description) in enumerate(wa):
        lines.append(b'%s\n    {"name": %s, "description": %s}' % (b"," if k else b"", q(name), q(description)))
    lines.append(b'%s],\n  "environment": {' % (b"\n  " if wa else b""))
    for k, name in enumerate(ENV_NAMES):
        value = _env(name)
        lines.append(b'%s\n    %s: %s' % (b"," if k else b"", q(name), q(value) if value is not None else b"null"))
    lines.append(b"\n  }\n}\n")
    _out(b"".join(lines))
    r.lib.gpumem_finalize()
    return 0


def _usage(to, ok):
    to.write("usage: %s [--json]\n"
             "  Prints gpumem-info's report: gpumem's backend, devices and capabilities.\n"
             "  --json  one JSON object instead (docs/gpumem-info-json.md); on failure\n"
             "          {\"error\": {...}} and exit status 1\n" % _PROG)
    return 0 if ok else 2


def main(argv=None):
    """Print gpumem-info's report (``--json``: its JSON object); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) > 1:
        print("%s: one argument at most, got %d: %s" % (_PROG, len(argv), " ".join(argv)), file=sys.stderr)
        return _usage(sys.stderr, False)
    if argv and argv[0] in ("--help", "-h"):
        return _usage(sys.stdout, True)

    if argv and argv[0] != "--json":
        print("%s: unknown option '%s'" % (_PROG, argv[0]), file=sys.stderr)
        return _usage(sys.stderr, False)
    r = _Report()
    try:
        return _json(r) if argv else _text(r)
    finally:
        sys.stdout.flush()


def _run():
    """main() as a command: a reader that stops early (``python -m gpumem | head -3``) ends the
    report quietly, as it ends gpumem-info (SIGPIPE), with no traceback."""
    try:
        return main()
    except BrokenPipeError:
        # The interpreter flushes stdout once more at exit: give it somewhere to write.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 128 + 13  # what a shell reports for a program ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(_run())
