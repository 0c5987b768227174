-- Lmod module file for gpumem 0.1.0 installed with `meson install --prefix=<root>`.
-- Copy to <modulepath>/gpumem/0.1.0.lua and set root below.  Executables and
-- programs built with pkg-config carry rpaths: LD_LIBRARY_PATH is not needed.
-- SPDX-License-Identifier: MIT
help([[
gpumem 0.1.0: one C ABI for GPU memory (CUDA, HIP, host), with Fortran and Python bindings.
  cc app.c $(pkg-config --cflags --libs gpumem)
  gfortran app.f90 $(pkg-config --cflags --libs gpumem-fortran)
  find_package(gpumem CONFIG REQUIRED COMPONENTS fortran)   # CMake
  gpumem-info                                                # what this node gets
]])
whatis("Name: gpumem")
whatis("Version: 0.1.0")
whatis("Category: library, GPU, memory")
whatis("URL: https://github.com/gpumem/gpumem")

local root = "/opt/gpumem/0.1.0"                       -- the install prefix
local libdir = pathJoin(root, "lib/x86_64-linux-gnu")  -- meson's libdir (lib64 on RHEL-likes)

family("gpumem")
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("PKG_CONFIG_PATH", pathJoin(libdir, "pkgconfig"))
prepend_path("CMAKE_PREFIX_PATH", root)
-- the Python package as `meson install` put it (match the python3 in use)
prepend_path("PYTHONPATH", pathJoin(root, "lib/python3/dist-packages"))
setenv("GPUMEM_ROOT", root)
