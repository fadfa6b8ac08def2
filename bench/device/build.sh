# Sourced on the GPU machine of the `device` tool, from the repository root, after
# bench/device/deps.sh made build-deps/ here and the call carried it:
#   source bench/device/build.sh [TARGET...]      (default: jisu jisu_tests)
# Puts HEAD's version of the files listed in build-deps/other.list in place, configures a
# Release build for sm_90a against the carried dependencies, builds the targets into build/,
# and exports LD_LIBRARY_PATH so the binaries find the carried libraries. Returns non-zero when
# a target did not build. $OUT/build.log holds the compiler output.
[ -d build-deps/usr ] || [ ! -f build-deps/usr.tar.xz ] || tar xJf build-deps/usr.tar.xz -C build-deps
JISU_DEPS=$PWD/build-deps/usr
JISU_DEPS_LIB=$JISU_DEPS/lib/x86_64-linux-gnu
[ -d "$JISU_DEPS_LIB" ] || { echo "no build-deps/ (run bench/device/deps.sh and carry it)"; return 1; }
if [ -f build-deps/other.list ]; then
  while read -r f; do
    if [ -f "build-deps/head-other/$f" ]; then cp "build-deps/head-other/$f" "$f"; else rm -f "$f"; fi
  done < build-deps/other.list
fi
sed -i "s|@PREFIX@|$JISU_DEPS|" "$JISU_DEPS_LIB"/pkgconfig/*.pc
export PKG_CONFIG_PATH=$JISU_DEPS_LIB/pkgconfig
JISU_PKGC=$(command -v pkg-config || true)
if [ -z "$JISU_PKGC" ]; then
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$JISU_DEPS_LIB" "$JISU_DEPS/bin/pkgconf" > /tmp/pkg-config
  chmod +x /tmp/pkg-config; JISU_PKGC=/tmp/pkg-config
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DJISU_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$JISU_DEPS" -DPKG_CONFIG_EXECUTABLE="$JISU_PKGC" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$JISU_DEPS_LIB -Wl,-rpath-link,$JISU_DEPS_LIB" > /tmp/cmake.log 2>&1 ||
  { tail -40 /tmp/cmake.log; return 1; }
# -k 0: jisu_tests' post-build test discovery runs the binary without the carried libraries on
# the path (setting them for the whole build would load Debian's libssl/libz into cmake) and
# fails; the binary is linked by then. The old binaries go first, so what exists afterwards was
# linked by this build.
set -- "${@:-jisu jisu_tests}"
for t in $*; do rm -f "build/$t"; done
cmake --build build --target $* -j "$(nproc)" -- -k 0 > "${OUT:-/tmp}/build.log" 2>&1
export LD_LIBRARY_PATH=$JISU_DEPS_LIB:${LD_LIBRARY_PATH:-}
for t in $*; do
  [ -x "build/$t" ] || { grep -E "error" "${OUT:-/tmp}/build.log" | head -30; echo "build/$t not built"; return 1; }
done
