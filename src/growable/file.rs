//! The file-backed growable filter: [`GrowableBloomFilter::open_file`].
//!
//! Layer `i` is a file-backed [`BloomFilter`] of its own file — the path itself for the
//! first layer, `PATH.i` next to it for the others — flagged `GROWS`, with live counters
//! after its checksum (`format.rs`): the keys the layer took and, in the first file, the
//! number of layers after the first. Growth is fixed at ×2 capacity and ×0.5 rate per layer
//! (the header has no room for other values).
//!
//! # The protocol across processes
//! In memory, a layer is *installed* by the compare-exchange on its slot; here it is
//! installed by the compare-exchange (SeqCst) of the shared layer count from `i - 1` to
//! `i`, made only after layer `i`'s file exists. Every process reads that count where the
//! in-memory chain loads its slots (finding the newest layer, and step 3 of
//! [`insert_if_absent`](GrowableBloomFilter::insert_if_absent)), and maps a layer it has not
//! mapped yet before using it. The proof at `insert_if_absent` is about one location that
//! is compare-exchanged once per layer and loaded by everyone, plus SeqCst fences; it holds
//! word for word with the shared count as that location, for the reason given at
//! [`BloomFilter::open_file`]: the atomic instructions act on the same physical memory
//! through every mapping.
//!
//! Creating layer `i` is idempotent (the file is linked into place whole, and a process
//! that finds it there opens it), so a process killed between creating the file and
//! raising the count leaves a file that the next grower uses.

use std::path::{Path, PathBuf};

use super::{GrowableBloomFilter, GrowableBuilder, Layer, Padded, Shape, MAX_LAYERS};
use crate::error::Error;
use crate::file::{open_existing, peek_header, resolve_dangling_link, trailer_word, FileKind};
use crate::format::GROWS;
use crate::format::{COUNT_AT, LAYERS_AT};
use crate::hash::KeyHasher;
use crate::storage::Published;
use crate::sync::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, SeqCst},
};
use crate::{BloomFilter, Verification};

/// Capacity ratio of consecutive layers of a file-backed chain.
const GROWTH: u64 = 2;
/// Rate ratio of consecutive layers of a file-backed chain.
const TIGHTENING: f64 = 0.5;

/// What a file-backed chain keeps of its files.
pub(super) struct ChainFile {
    /// The first layer's file (symlinks resolved), which names the others.
    first: PathBuf,
    /// What opening a layer checks.
    verification: Verification,
}

/// The file of layer `i`: `first` itself, or `first.i`.
fn layer_path(first: &Path, i: usize) -> PathBuf {
    if i == 0 {
        return first.to_path_buf();
    }
    let mut name = first.as_os_str().to_owned();
    name.push(format!(".{i}"));
    PathBuf::from(name)
}

/// The path of `path`'s real file: symlinks resolved, so that the layers live next to the
/// file the link points at.
fn real_path(path: &Path) -> Result<PathBuf, Error> {
    let p = resolve_dangling_link(path)?;
    Ok(std::fs::canonicalize(&p).unwrap_or(p))
}

impl GrowableBloomFilter {
    /// The growable filter stored in the file at `path` (and, once it grows, in `PATH.1`,
    /// `PATH.2`, … next to it), shared by every thread and every process that opens it;
    /// created with a first layer of `initial_capacity` keys for a total rate of `fpr` if
    /// `path` is missing.
    ///
    /// Each layer is a file-backed [`BloomFilter`] (see [`BloomFilter::open_file`] for the
    /// crash contract, which holds per layer), twice the capacity of the last at half its
    /// rate, so the rate stays at `fpr` however many keys come and the files grow with the
    /// keys: a chain that took 1,000 keys is the first layer's file only. The concurrency
    /// contract — no false negatives, at most one winner per new key, across growth steps —
    /// holds between processes too (the argument is in the source, `growable/file.rs`).
    /// Opening reads the headers only.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// # let dir = std::env::temp_dir().join(format!("bb-grow-file-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("seen.bloom");
    /// let seen = GrowableBloomFilter::open_file(&path, 1_000, 0.01)?;
    /// let fresh = (0..10_000u64).filter(|i| seen.insert_if_absent(i)).count();
    /// assert!(fresh > 9_900 && seen.num_layers() == 4);   // 1k + 2k + 4k + 8k ≥ 10k
    /// drop(seen);
    /// let again = GrowableBloomFilter::open_file_existing(&path)?; // all four layers
    /// assert!((0..10_000u64).all(|i| !again.insert_if_absent(&i)));
    /// assert!(dir.join("seen.bloom.3").exists());
    /// again.flush()?;                                      // every layer on disk
    /// again.close()?;                                      // and sealed
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`GrowableBuilder::build`](super::GrowableBuilder::build) and
    /// [`BloomFilter::open_file`]; [`Error::Conflict`] if the file holds a chain with another
    /// initial capacity or rate, or a fixed-size filter (`what` is `"kind"`); an error if a
    /// layer that the first file counts is missing or damaged.
    pub fn open_file<P: AsRef<Path>>(
        path: P,
        initial_capacity: u64,
        fpr: f64,
    ) -> Result<Self, Error> {
        Self::builder()
            .initial_capacity(initial_capacity)
            .fpr(fpr)
            .open_file(path)
    }

    /// The growable filter in the existing file at `path`, with its own parameters (see
    /// [`open_file`](Self::open_file)).
    ///
    /// # Errors
    /// [`Error::Io`] with kind `NotFound` if there is no such file; otherwise as
    /// [`open_file`](Self::open_file).
    ///
    /// Example at [`open_file`](Self::open_file).
    pub fn open_file_existing<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        Self::open_file_existing_with(path, Verification::Full)
    }

    /// [`open_file_existing`](Self::open_file_existing), checking every layer as
    /// `verification` says (see [`BloomFilter::open_file_existing_with`]).
    ///
    /// ```
    /// use blockbloom::{GrowableBloomFilter, Verification};
    /// # let dir = std::env::temp_dir().join(format!("bb-grow-existing-with-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// drop(GrowableBloomFilter::open_file(dir.join("s.bloom"), 100, 0.01)?);
    /// let f = GrowableBloomFilter::open_file_existing_with(dir.join("s.bloom"), Verification::HeaderOnly)?;
    /// # drop(f);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`open_file_existing`](Self::open_file_existing).
    pub fn open_file_existing_with<P: AsRef<Path>>(
        path: P,
        verification: Verification,
    ) -> Result<Self, Error> {
        let first = real_path(path.as_ref())?;
        let layer0 =
            BloomFilter::from_opened(open_existing(&first, None, FileKind::Layer, verification)?);
        Self::from_first_layer(first, layer0, verification)
    }

    /// How the keys were made from their input, as recorded by
    /// [`GrowableBuilder::key_format`] (0 unless one was given, and in memory).
    ///
    /// Example at [`GrowableBuilder::key_format`].
    pub fn key_format(&self) -> u64 {
        self.layer(0).filter.key_format()
    }

    /// How the open found the chain's files (see [`BloomFilter::file_condition`]): the
    /// worst of its layers' (not closed cleanly, then in use, then closed cleanly, whose
    /// lines were verified only if every layer's were, then created); `None` in memory.
    ///
    /// ```
    /// use blockbloom::{FileCondition, GrowableBloomFilter};
    /// # let dir = std::env::temp_dir().join(format!("bb-grow-cond-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// drop(GrowableBloomFilter::open_file(dir.join("s.bloom"), 100, 0.01)?);
    /// let f = GrowableBloomFilter::open_file_existing(dir.join("s.bloom"))?;
    /// assert_eq!(f.file_condition(), Some(FileCondition::ClosedCleanly { lines_verified: true }));
    /// # drop(f);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn file_condition(&self) -> Option<crate::FileCondition> {
        use crate::FileCondition::{ClosedCleanly, Created, InUse, NotClosedCleanly};
        let rank = |c: &crate::FileCondition| match c {
            NotClosedCleanly => 0,
            InUse => 1,
            ClosedCleanly {
                lines_verified: false,
            } => 2,
            ClosedCleanly { .. } => 3,
            Created => 4,
        };
        (0..self.num_layers())
            .filter_map(|i| self.layer(i).filter.file_condition())
            .min_by_key(rank)
    }

    /// The chain whose first layer is `layer0`, with every layer its file counts mapped,
    /// after checking that nothing foreign sits where its later layers go.
    fn from_first_layer(
        first: PathBuf,
        layer0: BloomFilter,
        verification: Verification,
    ) -> Result<Self, Error> {
        let shape = Shape {
            seed: layer0.seed(),
            initial_capacity: layer0.capacity(),
            fpr: layer0.target_fpr() / (1.0 - TIGHTENING),
            growth: GROWTH,
            tightening: TIGHTENING,
            huge_pages: None,
        };
        let chain = GrowableBloomFilter {
            layers: Published::new(Layer {
                filter: layer0,
                count: Padded(AtomicU64::new(0)),
            }),
            hasher: KeyHasher::new(shape.seed),
            shape,
            growth_failed: AtomicBool::new(false),
            file: Some(ChainFile {
                first,
                verification,
            }),
        };
        let opened = (|| {
            let more = chain.layer_count().load(Acquire);
            if more >= MAX_LAYERS as u64 {
                return Err(Error::InvalidSnapshot("layer count out of range"));
            }
            for i in 1..=more as usize {
                let layer = chain.open_layer(i, false)?;
                let _ = chain.layers.install(i, Box::new(layer));
            }
            for i in more as usize + 1..MAX_LAYERS {
                chain.check_layer_place(i)?;
            }
            Ok(())
        })();
        match opened {
            Ok(()) => Ok(chain),
            Err(e) => {
                // Refused: every file as it was (a seal would write a fresh checksum over a
                // chain found inconsistent).
                let mut chain = chain;
                chain.abandon_files();
                Err(e)
            }
        }
    }

    /// Lets go of every layer's file without sealing it (see `BloomFilter::abandon_file`).
    fn abandon_files(&mut self) {
        for i in 0..MAX_LAYERS {
            if let Some(layer) = self.layers.get_mut(i) {
                layer.filter.abandon_file();
            }
        }
    }

    /// [`Error::ForeignLayer`] if something other than this chain's layer `i` is at that
    /// layer's path. This chain's own layer file there (made by a grower that was stopped
    /// before it raised the count, or by one growing right now) is fine: growth adopts it.
    fn check_layer_place(&self, i: usize) -> Result<(), Error> {
        let first = &self.file.as_ref().expect("file-backed").first;
        let path = layer_path(first, i);
        let (capacity, _) = self.shape.layer_params(i);
        let foreign = |reason| {
            Err(Error::ForeignLayer {
                path: path.display().to_string(),
                reason,
            })
        };
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(&e, &path.display().to_string())),
            Ok(m) if !m.is_file() => return foreign("not a regular file (a directory?)"),
            Ok(_) => {}
        }
        match peek_header(&path) {
            Ok((_, flags)) if flags & GROWS == 0 => foreign("a fixed-size filter, not a layer"),
            Ok((h, _)) if h.seed != self.shape.seed || h.capacity != capacity => {
                foreign("a layer of another chain (a leftover of an earlier state?)")
            }
            // Keys go into a layer only once the count includes it: an uncounted layer that
            // took keys means the count in the first file was damaged, and the keys in this
            // layer and after it would look new.
            Ok((h, _)) => match std::fs::File::open(&path)
                .map_err(|e| Error::io(&e, &path.display().to_string()))
                .and_then(|f| trailer_word(&f, &path, h.nlines, COUNT_AT))
            {
                Ok(0) => Ok(()),
                // Counted since we read the count (another process grew the chain).
                Ok(_) if self.layer_count().load(Acquire) >= i as u64 => Ok(()),
                Ok(_) => Err(Error::InvalidSnapshot(
                    "a layer after the chain's layer count holds keys: the count in the first \
                     file is damaged",
                )),
                Err(e) => Err(e),
            },
            Err(Error::Io { kind, message }) => Err(Error::Io { kind, message }),
            Err(_) => foreign("not a blockbloom filter file"),
        }
    }

    /// The shared number of layers after the first (in the first layer's trailer).
    fn layer_count(&self) -> &AtomicU64 {
        self.layer(0)
            .filter
            .chain_word(LAYERS_AT)
            .expect("a file-backed chain's first layer is a layer file")
    }

    /// Opens (with `create`, or creates) layer `i`'s file, with the parameters the shape
    /// gives it and the chain's seed.
    fn open_layer(&self, i: usize, create: bool) -> Result<Layer, Error> {
        let (capacity, fpr) = self.shape.layer_params(i);
        let file = self.file.as_ref().expect("file-backed");
        let filter = BloomFilter::builder()
            .capacity(capacity)
            .fpr(fpr)
            .seed(self.shape.seed)
            .key_format(self.key_format())
            .verification(file.verification)
            .open_file_kind(&layer_path(&file.first, i), FileKind::Layer, create)?;
        Ok(Layer {
            filter,
            count: Padded(AtomicU64::new(0)),
        })
    }

    /// The newest installed layer by the shared count, mapping the layers this process has
    /// not mapped yet. A counted layer that cannot be opened (its file removed under us)
    /// stops the scan there and marks growth failed.
    pub(super) fn newest_in_files(&self) -> usize {
        let counted = (self.layer_count().load(Acquire) as usize).min(MAX_LAYERS - 1);
        let mut top = 0;
        while top < counted {
            if self.layers.get(top + 1).is_none() {
                match self.open_layer(top + 1, false) {
                    // Err: another thread of ours mapped it first; ours is dropped.
                    Ok(layer) => drop(self.layers.install(top + 1, Box::new(layer))),
                    Err(_) => {
                        self.growth_failed.store(true, Relaxed);
                        break;
                    }
                }
            }
            top += 1;
        }
        top
    }

    /// Creates (or finds) layer `top + 1`'s file, then installs it by raising the shared
    /// count from `top` (unless another thread or process did); the cause if it cannot.
    pub(super) fn try_grow_in_files(&self, top: usize) -> Result<(), Error> {
        if self.newest_in_files() > top {
            return Ok(());
        }
        if top + 1 >= MAX_LAYERS {
            return Err(Error::TooManyLayers);
        }
        if self.layer_count().load(Acquire) > top as u64 {
            // Counted, but `newest_in_files` could not map it: say why.
            return self.open_layer(top + 1, false).map(drop);
        }
        self.check_layer_place(top + 1)?;
        let layer = self.open_layer(top + 1, true)?;
        drop(self.layers.install(top + 1, Box::new(layer)));
        // Err: someone raised it already (the count only moves from `top` once).
        let _ = self
            .layer_count()
            .compare_exchange(top as u64, top as u64 + 1, SeqCst, Relaxed);
        Ok(())
    }

    /// The files of a file-backed chain's layers, first layer first: the path it was opened
    /// with (symlinks resolved), then `PATH.1`, `PATH.2`, …; empty for a chain in memory.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// # let dir = std::env::temp_dir().join(format!("bb-grow-paths-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let seen = GrowableBloomFilter::open_file(dir.join("s.bloom"), 1_000, 0.01)?;
    /// seen.try_reserve(2_000)?;
    /// let names: Vec<_> = seen.layer_paths().iter().map(|p| p.file_name().unwrap().to_owned()).collect();
    /// assert_eq!(names, ["s.bloom", "s.bloom.1"]);
    /// # drop(seen);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn layer_paths(&self) -> Vec<PathBuf> {
        match &self.file {
            Some(f) => (0..self.num_layers())
                .map(|i| layer_path(&f.first, i))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Writes every layer's changed pages to its file and waits for the disk (see
    /// [`BloomFilter::flush`]). Does nothing for a chain in memory.
    ///
    /// # Errors
    /// [`Error::Io`] if a write-back fails.
    ///
    /// Example at [`open_file`](Self::open_file).
    pub fn flush(&self) -> Result<(), Error> {
        (0..self.num_layers()).try_for_each(|i| self.layer(i).filter.flush())
    }

    /// Closes a file-backed chain, reporting what dropping it would ignore: every layer is
    /// flushed and, where this is the last handle on its file, sealed with its checksum (see
    /// [`BloomFilter::close`]). For a chain in memory, the same as dropping it.
    ///
    /// # Errors
    /// The first layer's error, after trying every layer.
    ///
    /// Example at [`open_file`](Self::open_file).
    pub fn close(mut self) -> Result<(), Error> {
        let mut result = Ok(());
        for i in 0..MAX_LAYERS {
            if let Some(layer) = self.layers.get_mut(i) {
                let r = layer.filter.close_file();
                if result.is_ok() {
                    result = r;
                }
            }
        }
        result
    }
}

impl GrowableBuilder {
    /// [`GrowableBloomFilter::open_file`] with this builder's parameters: its
    /// [`seed`](Self::seed) is the hashing key of a new chain (an existing chain keeps its
    /// own, and a different seed given here is an [`Error::Conflict`]). A file-backed chain
    /// always grows ×2 with rates ×0.5: other [`growth`](Self::growth) or
    /// [`tightening`](Self::tightening) values are an [`Error::InvalidGrowth`].
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// # let dir = std::env::temp_dir().join(format!("bb-grow-seed-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("seen.bloom");
    /// let f = GrowableBloomFilter::builder().initial_capacity(1_000).seed(42).open_file(&path)?;
    /// assert_eq!(f.seed(), 42);
    /// drop(f);
    /// let other = GrowableBloomFilter::builder().initial_capacity(1_000).seed(7).open_file(&path);
    /// assert!(matches!(other, Err(blockbloom::Error::Conflict { what: "seed", .. })));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`GrowableBloomFilter::open_file`].
    pub fn open_file<P: AsRef<Path>>(self, path: P) -> Result<GrowableBloomFilter, Error> {
        if self.growth != GROWTH || self.tightening != TIGHTENING {
            return Err(Error::InvalidGrowth(
                "a file-backed chain grows x2 with rates x0.5",
            ));
        }
        let (seed, fpr, key_format, verification) =
            (self.seed, self.fpr, self.key_format, self.verification);
        // Validates the parameters the way an in-memory chain would.
        let initial_capacity = self.seed(0).build()?.initial_capacity();
        let first = real_path(path.as_ref())?;
        let layer0 = match open_existing(&first, None, FileKind::Layer, verification)
            .map(BloomFilter::from_opened)
        {
            Ok(mut f) => {
                let fits = check_chain(&f, initial_capacity, fpr).and_then(|()| {
                    if let Some(k) = key_format.filter(|&k| k != f.key_format()) {
                        return Err(Error::Conflict {
                            what: "key format",
                            file: f.key_format().to_string(),
                            requested: k.to_string(),
                        });
                    }
                    if seed.is_some_and(|s| s != f.seed()) {
                        return Err(Error::Conflict {
                            what: "seed",
                            file: "(secret)".into(),
                            requested: "another seed".into(),
                        });
                    }
                    Ok(())
                });
                if let Err(e) = fits {
                    f.abandon_file(); // refused: the file as it was
                    return Err(e);
                }
                f
            }
            Err(Error::Io {
                kind: std::io::ErrorKind::NotFound,
                ..
            }) => {
                // No chain here: a file in a later layer's place belongs to none.
                if let Some(i) = (1..MAX_LAYERS).find(|&i| layer_path(&first, i).exists()) {
                    if !first.exists() {
                        let path = layer_path(&first, i);
                        return Err(Error::ForeignLayer {
                            reason: if path.is_file() {
                                "a layer left over from an earlier state (its first file is gone)"
                            } else {
                                "not a regular file (a directory?)"
                            },
                            path: path.display().to_string(),
                        });
                    }
                }
                let mut b = BloomFilter::builder()
                    .capacity(initial_capacity)
                    .fpr(fpr * (1.0 - TIGHTENING))
                    .key_format(key_format.unwrap_or(0))
                    .verification(verification);
                if let Some(s) = seed {
                    b = b.seed(s);
                }
                b.open_file_kind(&first, FileKind::Layer, true)
                    .map_err(|e| e.for_rate_asked(fpr))?
            }
            Err(e) => return Err(e),
        };
        GrowableBloomFilter::from_first_layer(first, layer0, verification)
    }
}

/// [`Error::Conflict`] unless the first layer `f` is that of a chain for
/// `initial_capacity` keys at rate `fpr`.
fn check_chain(f: &BloomFilter, initial_capacity: u64, fpr: f64) -> Result<(), Error> {
    let file_fpr = f.target_fpr() / (1.0 - TIGHTENING);
    if f.capacity() != initial_capacity {
        return Err(Error::Conflict {
            what: "initial capacity",
            file: f.capacity().to_string(),
            requested: initial_capacity.to_string(),
        });
    }
    // The first layer is sized for `fpr × 0.5` exactly (halving is exact in floats).
    if f.target_fpr() != fpr * (1.0 - TIGHTENING) {
        return Err(Error::Conflict {
            what: "target fpr",
            file: file_fpr.to_string(),
            requested: fpr.to_string(),
        });
    }
    Ok(())
}
