#!/bin/bash
# Run 2: candidates, release/acquire row barriers. Device sampler fast path against HEAD: build both on the device (carried deps in build-deps/,
# base = HEAD's src/cuda; HEAD's files outside src/cuda, other.list), CUDA tests, memcheck of the
# sampling tests, the sampler alone (CudaSamplingTest.DISABLED_Timing), then bench-gpu
# --device-sampling in ABBA rounds (base, new, new, base, plus new with JISU_SAMPLER=reference:
# the old kernel behind the new host path), and one b64 run of each.
set -u
R=$PWD; DEPS=$R/build-deps/usr; LIBD=$DEPS/lib/x86_64-linux-gnu
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
g++ --version | head -1; nvcc --version | tail -1
[ -f build-deps/other.list ] && while read -r f; do if [ -f "build-deps/head-other/$f" ]; then cp "build-deps/head-other/$f" "$f"; else rm -f "$f"; fi; done < build-deps/other.list
sed -i "s|@PREFIX@|$DEPS|" $LIBD/pkgconfig/*.pc
export PKG_CONFIG_PATH=$LIBD/pkgconfig
PKGC=$(command -v pkg-config || true)
if [ -z "$PKGC" ]; then printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LIBD" "$DEPS/bin/pkgconf" > /tmp/pkg-config; chmod +x /tmp/pkg-config; PKGC=/tmp/pkg-config; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DJISU_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH=$DEPS -DPKG_CONFIG_EXECUTABLE=$PKGC \
  -DCMAKE_EXE_LINKER_FLAGS="-L$LIBD -Wl,-rpath-link,$LIBD" > /tmp/cmake.log 2>&1 || { tail -40 /tmp/cmake.log; exit 1; }
cmake --build build --target jisu -j 16 > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; tail -15 $OUT/build.log; exit 1; }
for try in 1 2; do
  cmake --build build --target jisu_tests -j 16 -- -k 0 >> $OUT/build.log 2>&1 && break
  bad=$(grep -oE "FAILED: \[code=[0-9]+\] CMakeFiles/jisu_tests.dir/.*_test\.cc\.o" $OUT/build.log | sed -E 's|.*jisu_tests.dir/||; s|\.o$||' | sort -u)
  echo "left out of jisu_tests: $bad"; [ -z "$bad" ] && break; rm -f $bad
done
grep -E "sampling.cu.*(registers|spill)" $OUT/build.log | head
echo "build new: $((SECONDS - t0)) s"
export LD_LIBRARY_PATH=$LIBD:${LD_LIBRARY_PATH:-}
D=$R/bins; mkdir -p $D; cp build/jisu $D/jisu; cp build/jisu_tests $D/jisu_tests
( timeout 240 $D/jisu_tests --gtest_filter='Cuda*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log ) &
TP=$!
mkdir -p /tmp/cuda-new; cp src/cuda/* /tmp/cuda-new/; cp build-deps/base-cuda/* src/cuda/
cmake --build build --target jisu -j 12 > /tmp/build-base.log 2>&1 || { tail -15 /tmp/build-base.log; }
cp build/jisu $D/jisu-base; cp /tmp/cuda-new/* src/cuda/
echo "build base: $((SECONDS - t0)) s"
wait $TP
grep -E "^\[  (PASSED|FAILED) |tests rc|^\[  FAILED|^\[==========\]" $OUT/tests.log | head -20; grep -B2 -A8 "Failure" $OUT/tests.log | head -40
echo "tests done: $((SECONDS - t0)) s"
timeout 150 compute-sanitizer --tool memcheck $D/jisu_tests \
  --gtest_filter='CudaSamplingTest.*:CudaBackendTest.DeviceSamplingSplit*:CudaBackendTest.DeviceSamplingMixed*' > $OUT/memcheck.log 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.log | head
echo "memcheck done: $((SECONDS - t0)) s"
for sp in 32 16 24; do echo "== JISU_SAMPLE_SPLIT=$sp"; JISU_SAMPLE_SPLIT=$sp timeout 60 $D/jisu_tests --gtest_also_run_disabled_tests --gtest_filter=CudaSamplingTest.DISABLED_Timing; done > $OUT/sampler.log 2>&1
grep -E "^sampler|^==" $OUT/sampler.log | grep -v "rows 64"
N=$D/jisu; B=$D/jisu-base; A="bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --steps 100"
{
for r in 1 2 3 4 5 6; do
  echo "== base run $r"; timeout 60 $B $A
  echo "== new run $r"; timeout 60 $N $A
  echo "== new run $r.2"; timeout 60 $N $A
  echo "== base run $r.2"; timeout 60 $B $A
  echo "== new-refkernel run $r"; JISU_SAMPLER=reference timeout 60 $N $A
  [ $((SECONDS - t0)) -gt 470 ] && break
done
} > $OUT/bench.log 2>&1
python3 bench/gpu_step_summary.py $OUT/bench.log | tee $OUT/summary.txt
echo "bench done: $((SECONDS - t0)) s"
{ echo "== base run b64"; timeout 60 $B bench-gpu --device-sampling --batch 1,8,64 --prefill 16 --steps 100
  echo "== new run b64"; timeout 60 $N bench-gpu --device-sampling --batch 1,8,64 --prefill 16 --steps 100; } > $OUT/final.log 2>&1
python3 bench/gpu_step_summary.py $OUT/final.log
echo "end: $((SECONDS - t0)) s"
