#!/usr/bin/env bash
# Model-check blockbloom's atomic protocols with loom (see loom-tests/tests/loom.rs).
# Release build with debug assertions, 2 preemptions per execution (as crossbeam and
# sharded-slab do); a separate target dir so the cfg does not invalidate normal builds.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg blockbloom_loom ${RUSTFLAGS:-}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
exec cargo test --release --target-dir target/loom -p blockbloom-loom-tests --test loom --test expiring --test planes "$@"
