# Spack recipe for gpumem.  Use it from a repository of your own:
#   spack repo create myrepo && cp -r packaging/spack/gpumem myrepo/packages/
#
# gpumem publishes no release archive and no release tag yet, so this recipe downloads
# nothing by itself.  Build release 0.4.0 from a checkout of it (a Spack environment):
#   spack env create gpumem && spack env activate gpumem
#   spack develop --no-clone --path /path/to/gpumem gpumem@=0.4.0
#   spack add gpumem@=0.4.0 +fortran +python ^python@3.11 && spack install
# or the head of a git repository of the project that you name (a clone on a shared file
# system will do):
#   GPUMEM_GIT=file:///path/to/gpumem spack install gpumem@main +fortran
# When a release is tagged where everyone can reach it, add its version("X.Y.Z", tag="vX.Y.Z").
# SPDX-License-Identifier: MIT
import os

from spack.package import *


class Gpumem(MesonPackage):
    """One C ABI for GPU memory management over CUDA, HIP and host memory: device, pinned and
    managed memory, stream-ordered pools, virtual memory and IPC, with emulated fallbacks."""

    homepage = "https://github.com/gpumem/gpumem"
    # A placeholder until the repository is published: GPUMEM_GIT names the one to fetch.
    git = os.environ.get("GPUMEM_GIT", "file:///path/to/gpumem")

    license("MIT")

    version("main", branch="main")

    # The backends need only the vendor headers at build time; the driver/runtime is
    # loaded at run time, so one build also runs on machines without a GPU.
    variant("cuda", default=False, description="Build the CUDA backend (needs cuda.h)")
    variant("hip", default=False, description="Build the HIP backend (needs the HIP headers)")
    variant("fortran", default=True, description="Build the Fortran module (use gpumem)")
    variant("python", default=False, description="Install the Python package (ctypes; NumPy optional)")

    depends_on("meson@1.0:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("cuda", when="+cuda")
    depends_on("hip", when="+hip")
    depends_on("python@3.8:", when="+python", type=("build", "run"))
    depends_on("py-numpy", when="+python", type="run")

    def meson_args(self):
        spec = self.spec
        args = [
            "-Dtests=false",
            "-Dexamples=false",
            "-Dcuda=" + ("enabled" if "+cuda" in spec else "disabled"),
            "-Dhip=" + ("enabled" if "+hip" in spec else "disabled"),
            "-Dbindings=" + ("enabled" if "+fortran" in spec else "disabled"),
        ]
        if "+cuda" in spec:
            args.append("-Dcudaheaders=" + spec["cuda"].prefix.include)
        if "+hip" in spec:
            args.append("-Dhipheaders=" + spec["hip"].prefix.include)
        return args

    def setup_run_environment(self, env):
        if "+python" in self.spec:
            env.prepend_path("PYTHONPATH", join_path(self.prefix, self.spec["python"].package.purelib))

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_install(self):
        Executable(join_path(self.prefix.bin, "gpumem-info"))("--json", output=str)
