#!/bin/bash
# Assembles build-deps/ (ignored by /build*/) on this Debian 12 machine for a build on the GPU
# machine of the `device` tool (bench/device/build.sh): its image (Ubuntu 24.04, gcc 13, nvcc
# 13.0, cmake, ninja) lacks the project's other build dependencies, so their headers, libraries,
# CMake configs and pkg-config files travel with the call (`carry: ["build-deps"]`, packed: ~3 MB),
# plus HEAD's copies of src/backend/cuda (a base binary to compare against) and of files outside
# src/backend/cuda that others have modified in the working tree (other.list: the device builds HEAD's).
# Run from the repository root: bash bench/device/deps.sh
set -e
cd "$(git rev-parse --show-toplevel)"
P=build-deps/usr; L=/usr/lib/x86_64-linux-gnu; D=$P/lib/x86_64-linux-gnu
rm -rf build-deps; mkdir -p $P/include $D/pkgconfig $D/cmake $P/share/cmake $P/bin build-deps/base-cuda
cp -a /usr/include/{CLI,nlohmann,httplib.h,gtest,gmock,openssl,brotli,zlib.h,zconf.h,pcre2.h} $P/include/
cp -a /usr/include/x86_64-linux-gnu/openssl/* $P/include/openssl/
cp -a $L/cmake/GTest $D/cmake/
cp -a $L/libgtest.a $L/libgtest_main.a $L/libgmock.a $L/libgmock_main.a $D/
cp -a $L/libpcre2-8.so* $L/libcpp-httplib.so* $L/libssl.so* $L/libcrypto.so* $L/libbrotli{common,dec,enc}.so* \
  $L/libz.so* $L/libpkgconf.so* $D/
cp -a /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 $P/share/cmake/
cp -a /usr/bin/pkgconf $P/bin/
# prefix=@PREFIX@ is replaced on the device; no Requires.private (openssl/zlib/brotli .pc).
cat > $D/pkgconfig/libpcre2-8.pc <<'PC'
prefix=@PREFIX@
libdir=${prefix}/lib/x86_64-linux-gnu
includedir=${prefix}/include

Name: libpcre2-8
Description: PCRE2 8-bit (carried for the device build)
Version: 10.42
Libs: -L${libdir} -lpcre2-8
Cflags: -I${includedir}
PC
cat > $D/pkgconfig/cpp-httplib.pc <<'PC'
prefix=@PREFIX@
libdir=${prefix}/lib/x86_64-linux-gnu
includedir=${prefix}/include

Name: cpp-httplib
Description: cpp-httplib (carried for the device build)
Version: 0.11.4
Libs: -L${libdir} -lcpp-httplib
Cflags: -I${includedir} -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT
PC
# The base binary: every file of HEAD's src/backend/cuda.
for f in $(git ls-tree --name-only HEAD src/backend/cuda/); do
  git show HEAD:$f > build-deps/base-cuda/$(basename $f)
done
# Files others changed or added outside src/backend/cuda meanwhile: HEAD's version on the device (none
# for new files: removed there).
{ git diff --name-only HEAD -- . ':!src/backend/cuda' ':!bench'
  git ls-files --others --exclude-standard -- . ':!src/backend/cuda' ':!bench'; } > build-deps/other.list || true
while read -r f; do
  if git cat-file -e HEAD:"$f" 2>/dev/null; then mkdir -p build-deps/head-other/$(dirname $f); git show HEAD:"$f" > build-deps/head-other/$f; fi
done < build-deps/other.list
# The whole working tree travels with a call (64 MiB at most; the tracked files alone take ~66 MB,
# bench/device/slim.sh sets part aside): the dependencies go packed (14 MB -> ~3 MB); build.sh
# unpacks them on the device.
tar cJf build-deps/usr.tar.xz -C build-deps usr && rm -rf build-deps/usr
