# Sourced by scripts/setup.sh, test.sh and test_arm.sh: when each stage ends, and for each build
# how long it took and how many compiles the compiler cache answered (CMakeLists.txt runs every
# compile through ccache where it is installed). CI's 90 minutes are shared by every stage; its
# log says where they went.
JISU_STAGE_SCRIPT=$(basename "$0")
stage() { echo "[$JISU_STAGE_SCRIPT] $1 at ${SECONDS}s"; }

# "hits misses" of the cache so far (0 0 without ccache).
_ccache_counts() {
  if command -v ccache > /dev/null; then
    ccache --print-stats 2> /dev/null | awk '
      $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
      $1 == "cache_miss" { m += $2 }
      END { print h + 0, m + 0 }'
  else
    echo 0 0
  fi
}

# build NAME CMD...: runs the build command, then prints its time and the cache's answers.
build() {
  local name=$1 t0=$SECONDS h0 m0 h1 m1
  shift
  read -r h0 m0 < <(_ccache_counts)
  "$@"
  read -r h1 m1 < <(_ccache_counts)
  local h=$((h1 - h0)) n=$((h1 - h0 + m1 - m0))
  echo "[$JISU_STAGE_SCRIPT] $name: $((SECONDS - t0)) s, ccache hits $h of $n compiles" \
       "($( [ "$n" -gt 0 ] && echo "$((100 * h / n))%" || echo "nothing compiled"))"
  stage "$name done"
}
