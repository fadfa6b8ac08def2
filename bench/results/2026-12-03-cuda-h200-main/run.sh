#!/bin/bash
# Issue 6 figures on main (67d0124, the fast device sampler in): build on the device (deps
# carried in build-deps/, made by bench/device/deps.sh), the CUDA
# tests, then bench-gpu for the Llama-3.1-8B shape: decode b1/8/64/256 at context 1024 and
# prefill 512/2048/8192 (three runs), b1 without fusion and without graphs (two runs each).
set -u
R=$PWD; DEPS=$R/build-deps/usr; LIBD=$DEPS/lib/x86_64-linux-gnu
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
sed -i "s|@PREFIX@|$DEPS|" $LIBD/pkgconfig/*.pc
export PKG_CONFIG_PATH=$LIBD/pkgconfig
PKGC=$(command -v pkg-config || true)
if [ -z "$PKGC" ]; then printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LIBD" "$DEPS/bin/pkgconf" > /tmp/pkg-config; chmod +x /tmp/pkg-config; PKGC=/tmp/pkg-config; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DJISU_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH=$DEPS -DPKG_CONFIG_EXECUTABLE=$PKGC \
  -DCMAKE_EXE_LINKER_FLAGS="-L$LIBD -Wl,-rpath-link,$LIBD" > /tmp/cmake.log 2>&1 || { tail -40 /tmp/cmake.log; exit 1; }
# -k 0: jisu_tests' post-build test discovery fails (it runs the binary without the carried
# libraries on the path); the binary itself is linked by then.
cmake --build build --target jisu jisu_tests -j 16 -- -k 0 > $OUT/build.log 2>&1
[ -x build/jisu ] && [ -x build/jisu_tests ] || { grep -E "error" $OUT/build.log | head -30; tail -15 $OUT/build.log; exit 1; }
echo "build: $((SECONDS - t0)) s"
export LD_LIBRARY_PATH=$LIBD:${LD_LIBRARY_PATH:-}
J=build/jisu
( timeout 120 build/jisu_tests --gtest_filter='Cuda*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log )
grep -E "^\[  (PASSED|FAILED) |tests rc|^\[  FAILED" $OUT/tests.log | head -20
echo "tests: $((SECONDS - t0)) s"
{
for r in 1 2 3; do
  echo "== main run $r"; timeout 100 $J bench-gpu --device-sampling --batch 1,8,64,256 --prefill 512,2048,8192 --steps 100
  [ $r -le 2 ] && { echo "== main-unfused run $r"; timeout 60 $J bench-gpu --device-sampling --unfused --batch 1 --prefill 16 --steps 100
                    echo "== main-nographs run $r"; timeout 60 $J bench-gpu --device-sampling --no-graphs --batch 1 --prefill 16 --steps 100; }
  [ $((SECONDS - t0)) -gt 300 ] && break
done
} > $OUT/bench.log 2>&1
grep -E "^== |^ +(1|8|64|256) +[0-9]|^ *(512|2048|8192) +[0-9]" $OUT/bench.log
echo "end: $((SECONDS - t0)) s"
