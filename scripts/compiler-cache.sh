# Sourced by the build scripts: sets compiler_cache_args, the cmake arguments that compile through
# ccache when it is installed (scripts/setup.sh installs it; XMLT_CCACHE=0 turns it off). Its
# folder is .ccache/ in the checkout unless CCACHE_DIR names another, so a clean clone (CI) starts
# with an empty cache and its time is a cold build's.
# What it saves in one run of scripts/test.sh: the simulated-GPU build (build-sim/) compiles every
# file outside the CUDA backend and its tests to the same preprocessed text as the Release build
# (build/), and ccache's preprocessor mode hashes that text, not the -D and -I flags that differ,
# so build-sim/ takes those objects from build/'s. The sanitized builds share nothing with them.
compiler_cache_args=()
if [[ ${XMLT_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$PWD/.ccache}
  compiler_cache_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
