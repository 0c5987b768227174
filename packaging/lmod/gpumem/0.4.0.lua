-- Lmod module file for gpumem 0.4.0 installed with `meson install --prefix=<root>`.
-- Copy to <modulepath>/gpumem/0.4.0.lua and set root below.  Executables and
-- programs built with pkg-config carry rpaths: LD_LIBRARY_PATH is not needed.
-- SPDX-License-Identifier: MIT
help([[
gpumem 0.4.0: one C ABI for GPU memory (CUDA, HIP, host), with Fortran and Python bindings.
  cc app.c $(pkg-config --cflags --libs gpumem)
  gfortran app.f90 $(pkg-config --cflags --libs gpumem-fortran)
  find_package(gpumem CONFIG REQUIRED COMPONENTS fortran)   # CMake
  gpumem-info                                                # what this node gets
]])
whatis("Name: gpumem")
whatis("Version: 0.4.0")
whatis("Category: library, GPU, memory")
whatis("URL: https://github.com/gpumem/gpumem")

local root = "/opt/gpumem/0.4.0"                       -- the install prefix
local libdir = pathJoin(root, "lib/x86_64-linux-gnu")  -- meson's libdir (lib64 on RHEL-likes)

family("gpumem")
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("PKG_CONFIG_PATH", pathJoin(libdir, "pkgconfig"))
prepend_path("CMAKE_PREFIX_PATH", root)
-- The Python package where `meson install` puts it, which is where the python3 meson found
-- installs (`meson introspect BUILD --installed | grep gpumem/__init__`):
-- <prefix>/lib/python3/dist-packages with Debian's and Ubuntu's own python3, else
-- <prefix>/lib/pythonX.Y/site-packages, X.Y here the python3 on PATH when the module loads.
-- Both are named: the one not installed is never searched.
prepend_path("PYTHONPATH", pathJoin(root, "lib/python3/dist-packages"))
local pyver = capture("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])' 2>/dev/null"):gsub("%s+", "")
if pyver ~= "" then
    prepend_path("PYTHONPATH", pathJoin(root, "lib/python" .. pyver .. "/site-packages"))
end
setenv("GPUMEM_ROOT", root)
