# Cross build for 64-bit Arm Linux on a Debian x86-64 host: the cross compiler
# (g++-aarch64-linux-gnu) and the arm64 libraries installed through multiarch
# (dpkg --add-architecture arm64; scripts/setup.sh), run by qemu-user. ctest and the tests that
# start the jisu binary go through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: arm64 libraries live in /usr/lib/aarch64-linux-gnu, headers in /usr/include (shared
# by both architectures), so the host root is searched for libraries and packages, never for
# programs (those must run here).
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# "-cpu max" enables every extension qemu emulates, dotprod and fp16 arithmetic among them.
# Override JISU_QEMU_CPU with a model without dotprod (e.g. cortex-a53) to run the NEON kernels
# that do without it.
set(JISU_QEMU_CPU max CACHE STRING "qemu-aarch64 -cpu model the tests run on")
# No -L prefix: the dynamic loader and libc are the multiarch libc6:arm64 ones in the host root.
# The cross compiler's own copy (/usr/aarch64-linux-gnu) is another glibc build, and its loader
# with the multiarch libc.so.6 looped forever in the first pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -cpu ${JISU_QEMU_CPU})
