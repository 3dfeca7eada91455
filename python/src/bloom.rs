//! `BloomFilter`: the fixed-size filter, in memory or a file.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::*;

/// A set of `str` or `bytes` keys in about 1.2 bytes per key at a 1% false-positive rate,
/// shared by threads without locks: a key inserted is always found; a key never inserted is
/// found with probability about `fpr` once `capacity` keys are in.
///
/// Sized for `capacity` distinct keys at false-positive rate `fpr` (0 < fpr < 1); `seed`,
/// the hashing key, an int below 2**128 (random if `None`; filters to be merged need the
/// same one); `block_bits` 512, 256, 128 or 64 (smaller: faster inserts, more bits per
/// key); `huge_pages`: 2 MiB pages on Linux (faster beyond the CPU caches), by default for
/// filters of 16 MiB or more once they are dense, `True` at once, `False` never. Bad
/// parameters raise `ValueError`. `BloomFilter.open_file` makes one that processes share.
///
/// A `str` is the same key as the `bytes` of its UTF-8, as the Rust `&str` and as a line of
/// `blockbloom dedup`.
///
/// >>> seen = BloomFilter(1_000_000, 0.01)
/// >>> seen.insert_if_absent("https://example.com/")
/// True
/// >>> seen.insert_if_absent(b"https://example.com/")
/// False
/// >>> seen.insert_if_absent_many(["https://example.org/", "https://example.com/"])
/// [True, False]
/// >>> "https://example.org/" in seen
/// True
#[pyclass(frozen, module = "blockbloom")]
pub(crate) struct BloomFilter {
    pub(crate) inner: blockbloom::BloomFilter,
    /// The absolute path of a file-backed filter (what it pickles as).
    pub(crate) path: Option<std::path::PathBuf>,
}

#[pymethods]
impl BloomFilter {
    #[new]
    #[pyo3(
        signature = (capacity, fpr = 0.01, seed = None, block_bits = Unsigned(512), huge_pages = None),
        text_signature = "(capacity, fpr=0.01, seed=None, block_bits=512, huge_pages=None)"
    )]
    fn new(
        capacity: Unsigned<u64>,
        fpr: f64,
        seed: Option<Unsigned<u128>>,
        block_bits: Unsigned<u32>,
        huge_pages: Option<bool>,
    ) -> PyResult<Self> {
        let mut b = blockbloom::BloomFilter::builder()
            .capacity(capacity.0)
            .fpr(fpr)
            .block_bits(block_bits.0);
        if let Some(on) = huge_pages {
            b = b.huge_pages(on);
        }
        if let Some(Unsigned(s)) = seed {
            b = b.seed(s);
        }
        Ok(BloomFilter {
            inner: b.build().map_err(err)?,
            path: None,
        })
    }

    /// The filter in the file at `path`, shared by every process that opens it (created
    /// if missing). Pickled, it is that path: unpickling opens the same file, so a
    /// `multiprocessing` worker it is passed to shares it. An existing file's header is
    /// checked, and a cleanly closed one's lines too unless `verify=False` (O(1) for a huge
    /// file): a damaged file raises `SnapshotError` (an `OSError`) and is left as it was.
    #[staticmethod]
    #[pyo3(signature = (path, capacity = None, fpr = None, block_bits = None, verify = true))]
    fn open_file(
        path: std::path::PathBuf,
        capacity: Option<Unsigned<u64>>,
        fpr: Option<f64>,
        block_bits: Option<Unsigned<u32>>,
        verify: bool,
    ) -> PyResult<Self> {
        let block_bits = block_bits.map(|b| b.0);
        let verification = crate::errors::verification(verify);
        let inner = match capacity {
            Some(Unsigned(c)) => blockbloom::BloomFilter::builder()
                .capacity(c)
                .fpr(fpr.unwrap_or(0.01))
                .block_bits(block_bits.unwrap_or(512))
                .verification(verification)
                .open_file(&path),
            None if block_bits.is_some() => {
                return Err(PyValueError::new_err(
                    "block_bits needs capacity (an existing file keeps its own block size)",
                ))
            }
            None => blockbloom::BloomFilter::open_file_existing_with(&path, verification),
        }
        .map_err(err)?;
        Ok(BloomFilter {
            inner,
            path: Some(absolute(&path)?),
        })
    }

    /// The filter saved at `path` by `save` (or by Rust's `BloomFilter::save`), in memory.
    /// `OSError` if the file cannot be read; `SnapshotError` if it is not a snapshot, or a
    /// damaged or truncated one.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(BloomFilter {
            inner: blockbloom::BloomFilter::load(&path).map_err(err)?,
            path: None,
        })
    }

    /// Writes a snapshot to `path` atomically: a crash at any moment leaves the previous file
    /// or the complete new one. Safe while other threads insert. `OSError` on failure (the
    /// temporary file is removed).
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(err)
    }

    /// The snapshot as `bytes` (what `save` writes; `from_bytes` reads it back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        snapshots::to_bytes(py, &self.inner)
    }

    /// The filter of a snapshot made by `to_bytes` or `save`; `SnapshotError` if `data` is
    /// not one or is damaged.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(BloomFilter {
            inner: snapshots::from_bytes(data)?,
            path: None,
        })
    }

    /// Pickling: an in-memory filter as its contents (a snapshot), a file-backed one as its
    /// absolute path — a worker process unpickles the same shared filter, not a private
    /// copy whose inserts the others would never see.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        match &slf.get().path {
            Some(path) => Ok((
                py.get_type::<BloomFilter>().getattr("open_file")?,
                PyTuple::new(py, [path])?,
            )),
            None => snapshots::reduce_to_bytes::<BloomFilter>(py, &slf.get().inner),
        }
    }

    /// `copy.copy`: an in-memory filter with the same contents (also of a file-backed one).
    fn __copy__(&self) -> PyResult<Self> {
        Ok(BloomFilter {
            inner: snapshots::copy_of(&self.inner)?,
            path: None,
        })
    }

    /// `copy.deepcopy`: as `copy.copy` (a filter holds no Python objects).
    #[pyo3(signature = (_memo, /))]
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__()
    }

    /// Inserts `key`; `True` if it was absent (this call added it), `False` if it was
    /// (probably) present. Of several threads or processes offering the same new key at once,
    /// exactly one gets `True`. Keys are `str` or `bytes` (anything else: `TypeError`).
    fn insert_if_absent(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.insert_if_absent(&k))
    }

    /// Inserts `key` (`insert_if_absent` without the answer). Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn add(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        with_key(key, |k| self.inner.insert(&k))
    }

    /// `key in f`: `False` if `key` was certainly never inserted; `True` if it was, or,
    /// with probability about `target_fpr`, if it was not (a false positive). Keys are
    /// `str` or `bytes` (anything else: `TypeError`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }

    /// `insert_if_absent` for every key: the keys are read and hashed with the GIL held (a bad
    /// key raises before any is inserted), the filter is probed with it released.
    fn insert_if_absent_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        answered_batch(
            &self.inner,
            keys,
            blockbloom::HashedFilter::insert_if_absent_hashes,
        )
    }

    /// `[key in f for key in keys]` in one call, with the GIL released while the filter is
    /// probed. `keys` is any iterable of `str` or `bytes`; a bad key raises `TypeError`.
    fn contains_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        answered_batch(&self.inner, keys, blockbloom::HashedFilter::contains_hashes)
    }

    /// Inserts every key of `keys` (any iterable of `str` or `bytes`), like `set.update`;
    /// a bad key raises `TypeError` before any key is inserted.
    fn update(&self, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        update(&self.inner, keys)
    }

    /// Adds every key of `other`, a filter of the same size, rate, block size and seed
    /// (`ValueError` otherwise): afterwards `key in self` for every key in either.
    fn union(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.union(&other.inner).map_err(err)
    }

    /// `self |= other`: `union`.
    fn __ior__(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.union(&other.inner).map_err(err)
    }

    /// `self | other`: a new filter in memory with the keys of both (`ValueError` if they
    /// differ in size, rate, block size or seed).
    fn __or__(&self, other: &BloomFilter) -> PyResult<Self> {
        let out = self.__copy__()?;
        out.inner.union(&other.inner).map_err(err)?;
        Ok(out)
    }

    /// Keeps only the bits set in both filters (`other` of the same size, rate, block size
    /// and seed, else `ValueError`): afterwards the filter holds every key both held, with
    /// more false positives than a filter of the common keys alone. It clears bits, so a
    /// key inserted meanwhile by another thread or process may be lost: call it when no one
    /// else uses the filter.
    fn intersect(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.intersect(&other.inner).map_err(err)
    }

    /// `self &= other`: `intersect`.
    fn __iand__(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.intersect(&other.inner).map_err(err)
    }

    /// `self & other`: a new filter in memory, `intersect`ed.
    fn __and__(&self, other: &BloomFilter) -> PyResult<Self> {
        let out = self.__copy__()?;
        out.inner.intersect(&other.inner).map_err(err)?;
        Ok(out)
    }

    /// Removes every key (a file-backed filter's file too). Like `intersect`, call it when
    /// no other thread or process uses the filter.
    fn clear(&self) {
        self.inner.clear()
    }

    /// For a file-backed filter: writes its changed pages to the file and waits for the
    /// disk; every insert that returned before the call then survives a power loss. Does
    /// nothing for a filter in memory. `OSError` if the write-back fails.
    fn flush(&self) -> PyResult<()> {
        self.inner.flush().map_err(err)
    }

    /// Bits per block: 512 (the default), 256, 128 or 64.
    #[getter]
    fn block_bits(&self) -> u32 {
        self.inner.block_bits()
    }

    /// The hashing key, an int below 2**128: `BloomFilter(capacity, fpr, seed=f.seed)`
    /// makes a filter that `union` and `intersect` accept. Keep it private if keys may come
    /// from an adversary: with it, one can craft keys that look already inserted.
    #[getter]
    fn seed(&self) -> u128 {
        self.inner.seed()
    }

    /// Bits in the filter (its size in memory is `memory_bytes`).
    #[getter]
    fn num_bits(&self) -> u64 {
        self.inner.num_bits()
    }
    /// Bits set per key.
    #[getter]
    fn num_hashes(&self) -> u32 {
        self.inner.num_hashes()
    }
    /// Bytes of memory (or of file) the filter's bits take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// The number of distinct keys the filter was sized for.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    /// The false-positive rate the filter was sized for, reached at `capacity` keys.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }
    /// Whether the filter is a file (`open_file`) rather than memory of this process.
    #[getter]
    fn is_file_backed(&self) -> bool {
        self.inner.is_file_backed()
    }
    /// An estimate of the number of distinct keys inserted, from the number of bits set.
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    /// The expected number of new keys taken for repeats so far (false positives: pages
    /// not fetched), from the fill; `inf` once every bit is set (`estimated_len` is then
    /// 2**64 - 1: the fill bounds neither).
    fn estimated_false_positives(&self) -> f64 {
        self.inner.estimated_false_positives()
    }
    /// The false-positive rate now, estimated from the bits set.
    fn estimated_fpr(&self) -> f64 {
        self.inner.estimated_fpr()
    }
    fn __repr__(&self) -> String {
        let block = match self.inner.block_bits() {
            512 => String::new(),
            b => format!(", block_bits={b}"),
        };
        format!(
            "BloomFilter(capacity={}, fpr={}, num_bits={}{block}, file_backed={})",
            self.inner.capacity(),
            self.inner.target_fpr(),
            self.inner.num_bits(),
            if self.inner.is_file_backed() {
                "True"
            } else {
                "False"
            }
        )
    }
}
