#!/usr/bin/env python3
"""Checks `gpumem-info --json` against docs/gpumem-info-json.md.

usage: check_info_json.py GPUMEM_INFO [DOC [MANPAGE]]
Runs it (1) on the host backend, with awkward bytes in a variable, checking
every documented field and its type; (2) with a backend that cannot start,
checking the {"error": ...} object and exit status 1; (2b) with GPUMEM_LIMIT
set, unset and malformed, checking the cap the library parsed, in the JSON's
"limit" and the text report's "limit (GPUMEM_LIMIT)" line, and --version; (3) with DOC
(docs/gpumem-info-json.md): its examples parse, the success example has the
real output's fields, and every field is in the doc's tables; (4) with MANPAGE
(the generated gpumem-info.1): every variable the report lists is documented.
SPDX-License-Identifier: MIT
"""
import json
import os
import re
import subprocess
import sys

LEVELS = {"native", "emulated", "none", "broken"}
HANDLES = {"posix_fd"}
ENV_NAMES = ["GPUMEM_BACKEND", "GPUMEM_DISABLE", "GPUMEM_FALLBACK", "GPUMEM_LOG",
             "GPUMEM_CUDA_LIBRARY", "GPUMEM_HIP_LIBRARY", "GPUMEM_PINNED_CACHE",
             "GPUMEM_HOST_STRICT",
             "GPUMEM_TRACE", "GPUMEM_TRACE_MAX", "GPUMEM_BACKTRACE", "GPUMEM_LIMIT", "GPUMEM_POOL_PAGED", "GPUMEM_POOL_DECAY",
             "GPUMEM_SELFTEST"]


def run(exe, env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    full.update(env)
    p = subprocess.run([exe, "--json"], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    try:
        doc = json.loads(p.stdout.decode("utf-8"))  # strict: invalid UTF-8 or JSON fails here
    except ValueError as e:
        sys.exit("gpumem-info --json printed invalid JSON (%s):\n%r" % (e, p.stdout))
    if not isinstance(doc, dict):
        sys.exit("not one JSON object: %r" % doc)
    return p.returncode, doc


def expect(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_ok(exe):
    # Quotes, a backslash, a newline, a control byte, UTF-8 and an invalid byte.
    awkward = b'/no/such "lib"\\\n\x01\xc3\xa9\xff.so'
    env = {"GPUMEM_BACKEND": "host", "GPUMEM_HIP_LIBRARY": os.fsdecode(awkward)}
    rc, d = run(exe, env)
    expect(rc == 0, "exit status %d: %r" % (rc, d))
    expect(d.get("schema_version") == 1, "schema_version: %r" % d.get("schema_version"))
    for key in ("gpumem_version", "gpumem_version_compiled"):
        v = d.get(key)
        expect(isinstance(v, str) and len(v.split(".")) == 3 and all(p.isdigit() for p in v.split(".")),
               "%s: %r" % (key, v))
    expect(d["backend"] == "host", "backend: %r" % d["backend"])
    w = d.get("workarounds")
    expect(w == [], "workarounds on the host backend: %r" % w)
    devs = d.get("devices")
    expect(isinstance(devs, list) and len(devs) >= 1, "devices: %r" % devs)
    for i, dev in enumerate(devs):
        expect(dev.get("id") == i, "device id %r at %d" % (dev.get("id"), i))
        for key in ("name", "arch", "backend"):
            expect(isinstance(dev.get(key), str), "%s: %r" % (key, dev.get(key)))
        for key in ("total_memory", "free_memory", "vmm_granularity", "vmm_recommended_granularity"):
            expect(is_uint(dev.get(key)), "%s: %r" % (key, dev.get(key)))
        expect(dev["free_memory"] <= dev["total_memory"], "free > total")
        limit = dev.get("limit", "missing")
        expect(limit is None or is_uint(limit), "limit: %r" % limit)
        for key in ("managed_memory", "memory_pools", "virtual_memory", "host_register", "pinned_pools",
                    "managed_pools", "batch_memops", "rdma_memory", "dmabuf", "fabric_handles", "rows",
                    "stream_priorities", "host_funcs", "ipc_events"):
            expect(dev.get(key) in LEVELS, "%s: %r" % (key, dev.get(key)))
        for key in ("managed_migrates", "pageable_memory_access"):
            expect(isinstance(dev.get(key), bool), "%s: %r" % (key, dev.get(key)))
        for key in ("ipc_handle_types", "pool_ipc_handle_types"):
            v = dev.get(key)
            expect(isinstance(v, list) and set(v) <= HANDLES, "%s: %r" % (key, v))
        cc = dev.get("compute_capability", "missing")
        expect(cc is None or (isinstance(cc, str) and cc.replace(".", "", 1).isdigit()),
               "compute_capability: %r" % cc)
    envd = d.get("environment")
    expect(isinstance(envd, dict) and sorted(envd) == sorted(ENV_NAMES), "environment keys: %r" % envd)
    expect(envd["GPUMEM_BACKEND"] == "host", "GPUMEM_BACKEND: %r" % envd["GPUMEM_BACKEND"])
    expect(envd["GPUMEM_DISABLE"] is None, "unset variable not null: %r" % envd["GPUMEM_DISABLE"])
    want = awkward.decode("utf-8", errors="replace")
    expect(envd["GPUMEM_HIP_LIBRARY"] == want, "escaping: %r != %r" % (envd["GPUMEM_HIP_LIBRARY"], want))
    print("ok: %s, %d device(s), gpumem %s" % (d["backend"], len(devs), d["gpumem_version"]))


def check_error(exe):
    rc, d = run(exe, {"GPUMEM_BACKEND": "cuda", "GPUMEM_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"})
    expect(rc == 1, "init failure: exit status %d, want 1" % rc)
    err = d.get("error")
    expect(isinstance(err, dict), "no error object: %r" % d)
    expect(isinstance(err.get("status"), str) and err["status"].startswith("GPUMEM_ERROR_"),
           "error.status: %r" % err.get("status"))
    expect(is_uint(err.get("code")) and err["code"] > 0, "error.code: %r" % err.get("code"))
    expect(isinstance(err.get("message"), str) and err["message"], "error.message: %r" % err.get("message"))
    print("ok: init failure -> %s" % err["status"])


def check_limit(exe):
    """The cap GPUMEM_LIMIT sets, as the library parsed it, not the variable's text."""
    def text(env):
        full = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
        full.update(env)
        p = subprocess.run([exe], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        expect(p.returncode == 0, "gpumem-info with %r: exit status %d" % (env, p.returncode))
        return [l for l in p.stdout.decode().splitlines() if l.startswith("  limit (GPUMEM_LIMIT)")]

    _, d = run(exe, {"GPUMEM_BACKEND": "host"})
    total = d["devices"][0]["total_memory"]
    half = total // 100 * 50 + total % 100 * 50 // 100
    for value, want, shown in (("256M", 268435456, "268435456 bytes (256.0 MiB)"),
                               ("1GiB", 1 << 30, "1073741824 bytes (1.0 GiB)"),
                               (" 4096 ", 4096, "4096 bytes (4.0 KiB)"),
                               ("50%", half, "%d bytes (" % half),
                               ("bogus", None, "none: gpumem did not take the value"),
                               ("1.5G", None, "none: gpumem did not take the value"),
                               ("0", None, "none: gpumem did not take the value"),
                               ("", None, None), (None, None, None)):
        env = {"GPUMEM_BACKEND": "host", "GPUMEM_LOG": "error"}
        if value is not None:
            env["GPUMEM_LIMIT"] = value
        rc, d = run(exe, env)
        got = [dev.get("limit", "missing") for dev in d.get("devices", [])]
        expect(rc == 0 and got and all(g == want for g in got),
               "GPUMEM_LIMIT=%r: --json's limit %r, want %r" % (value, got, want))
        lines = text(env)
        if shown is None:
            expect(lines == [], "GPUMEM_LIMIT=%r: the report has a limit line: %r" % (value, lines))
        else:
            expect(len(lines) == len(got) and all(shown in l for l in lines),
                   "GPUMEM_LIMIT=%r: the report says %r, want %r" % (value, lines, shown))
    p = subprocess.run([exe, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    want = "gpumem-info (gpumem) %s, library %s\n" % (d["gpumem_version_compiled"], d["gpumem_version"])
    expect(p.returncode == 0 and p.stdout.decode() == want, "--version: %r, want %r" % (p.stdout, want))
    print("ok: GPUMEM_LIMIT as the library parsed it; --version")


def check_doc(exe, doc_path):
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    expect(len(blocks) >= 2, "%s: fewer than two JSON examples" % doc_path)
    examples = []
    for b in blocks:
        try:
            examples.append(json.loads(b))
        except ValueError as e:
            sys.exit("FAIL: an example in %s is not valid JSON (%s):\n%s" % (doc_path, e, b))
    _, real = run(exe, {"GPUMEM_BACKEND": "host"})
    ok = examples[0]
    expect(list(ok) == list(real), "the doc's example has keys %s, gpumem-info prints %s" % (list(ok), list(real)))
    expect(list(ok["devices"][0]) == list(real["devices"][0]),
           "the doc's device has keys %s, gpumem-info prints %s" % (list(ok["devices"][0]), list(real["devices"][0])))
    expect(list(ok["environment"]) == list(real["environment"]),
           "the doc's environment has %s, gpumem-info prints %s" % (list(ok["environment"]), list(real["environment"])))
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, re.M))
    for key in list(real) + list(real["devices"][0]):
        expect(key in documented, "field %r is in no table of %s" % (key, doc_path))
    for name in real["environment"]:
        expect("`%s`" % name in text, "%s is not named in %s" % (name, doc_path))


if __name__ == "__main__":
    check_ok(sys.argv[1])
    check_error(sys.argv[1])
    check_limit(sys.argv[1])
    if len(sys.argv) > 2:
        check_doc(sys.argv[1], sys.argv[2])
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            page = f.read()
        _, real = run(sys.argv[1], {"GPUMEM_BACKEND": "host"})
        for name in real["environment"]:
            expect(".B %s\n" % name in page, "%s is not documented in %s" % (name, sys.argv[3]))
