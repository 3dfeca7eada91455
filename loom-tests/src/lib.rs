//! Loom model checks of blockbloom's atomic protocols live in `tests/loom.rs`. They compile
//! to nothing unless built with `RUSTFLAGS="--cfg blockbloom_loom"`; run them with
//! `scripts/loom.sh`.
