//! `GrowableBloomFilter`: the filter that grows, in memory or a chain of files.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::*;

/// A Bloom filter for an unknown number of keys: a chain of filters, each larger than the
/// last, added as they fill, the whole chain below its false-positive rate.
///
/// The first filter holds `initial_capacity` keys; bad parameters raise `ValueError`.
/// `GrowableBloomFilter.open_file` makes one that processes share (and opens a `blockbloom
/// dedup` state made without `--capacity`).
///
/// >>> seen = GrowableBloomFilter(1000, 0.01)
/// >>> keys = [f"https://example.com/{i}" for i in range(5000)]
/// >>> seen.update(keys)
/// >>> all(key in seen for key in keys), seen.num_layers > 1
/// (True, True)
#[pyclass(frozen, module = "blockbloom")]
pub(crate) struct GrowableBloomFilter {
    pub(crate) inner: blockbloom::GrowableBloomFilter,
    /// The absolute path of a file-backed filter (what it pickles as).
    path: Option<std::path::PathBuf>,
}

#[pymethods]
impl GrowableBloomFilter {
    #[new]
    #[pyo3(
        signature = (initial_capacity = Unsigned(100_000), fpr = 0.01, seed = None),
        text_signature = "(initial_capacity=100000, fpr=0.01, seed=None)"
    )]
    fn new(
        initial_capacity: Unsigned<u64>,
        fpr: f64,
        seed: Option<Unsigned<u128>>,
    ) -> PyResult<Self> {
        let mut b = blockbloom::GrowableBloomFilter::builder()
            .initial_capacity(initial_capacity.0)
            .fpr(fpr);
        if let Some(Unsigned(s)) = seed {
            b = b.seed(s);
        }
        Ok(GrowableBloomFilter {
            inner: b.build().map_err(err)?,
            path: None,
        })
    }

    /// The growing filter in the file at `path` (and `path.1`, `path.2`, … as it grows),
    /// shared by every process that opens it; created if missing. Pickled, it is that path
    /// (as `BloomFilter.open_file`'s filters, with the same checks and `verify`).
    #[staticmethod]
    #[pyo3(signature = (path, initial_capacity = None, fpr = None, verify = true))]
    fn open_file(
        path: std::path::PathBuf,
        initial_capacity: Option<Unsigned<u64>>,
        fpr: Option<f64>,
        verify: bool,
    ) -> PyResult<Self> {
        let verification = crate::errors::verification(verify);
        let open = |c: u64, p: f64| {
            blockbloom::GrowableBloomFilter::builder()
                .initial_capacity(c)
                .fpr(p)
                .verification(verification)
                .open_file(&path)
        };
        let inner = match (initial_capacity.map(|c| c.0), fpr) {
            (None, None) => {
                match blockbloom::GrowableBloomFilter::open_file_existing_with(&path, verification)
                {
                    Err(blockbloom::Error::Io {
                        kind: std::io::ErrorKind::NotFound,
                        ..
                    }) => open(100_000, 0.01),
                    other => other,
                }
            }
            (c, p) => open(c.unwrap_or(100_000), p.unwrap_or(0.01)),
        }
        .map_err(err)?;
        Ok(GrowableBloomFilter {
            inner,
            path: Some(absolute(&path)?),
        })
    }

    /// Pickling: a file-backed filter as its absolute path (unpickled, the same shared
    /// filter); an in-memory one cannot be pickled (`TypeError`).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        match &slf.get().path {
            Some(path) => Ok((
                py.get_type::<GrowableBloomFilter>().getattr("open_file")?,
                PyTuple::new(py, [path])?,
            )),
            None => Err(PyTypeError::new_err(
                "an in-memory GrowableBloomFilter cannot be pickled: \
                 GrowableBloomFilter.open_file(path) makes one that processes share",
            )),
        }
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
    /// with probability about `target_fpr`, if it was not. Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }
    /// `[f.insert_if_absent(key) for key in keys]` in one call: the keys are read and hashed
    /// with the GIL held (a bad key raises `TypeError` before any is inserted), the filter is
    /// probed with it released.
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
    /// Inserts every key of `keys` (any iterable of `str` or `bytes`); a bad key raises
    /// `TypeError` before any key is inserted.
    fn update(&self, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        update(&self.inner, keys)
    }
    /// For a file-backed filter: writes its changed pages to its files and waits for the
    /// disk; every insert that returned before the call then survives a power loss. Does
    /// nothing in memory. `OSError` if the write-back fails.
    fn flush(&self) -> PyResult<()> {
        self.inner.flush().map_err(err)
    }
    /// Makes room for `additional` more new keys at the target rate: if the last layer
    /// cannot take that many more, the next layer is added now. Raises where that fails —
    /// `OSError` for a file-backed chain (no space, no permission to create the file, or,
    /// errno 17, something in the way of its next file), `MemoryError` in memory — so that
    /// a caller can stop, or at least say so, before the rate rises past `target_fpr`.
    ///
    /// >>> from blockbloom import GrowableBloomFilter
    /// >>> f = GrowableBloomFilter(1000, 0.01)
    /// >>> f.try_reserve(3000)
    /// >>> f.num_layers
    /// 3
    fn try_reserve(&self, py: Python<'_>, additional: u64) -> PyResult<()> {
        py.detach(|| self.inner.try_reserve(additional))
            .map_err(err)
    }
    /// How many filters the chain has (a new, larger one is added when the last is full).
    #[getter]
    fn num_layers(&self) -> usize {
        self.inner.num_layers()
    }
    /// Bytes of memory (or of files) all layers take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// The false-positive rate the whole chain stays below.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }
    /// The hashing key, an int below 2**128 (every layer's).
    #[getter]
    fn seed(&self) -> u128 {
        self.inner.seed()
    }
    /// The capacity of the first layer (each next one is larger).
    #[getter]
    fn initial_capacity(&self) -> u64 {
        self.inner.initial_capacity()
    }
    /// Whether the filter is files (`open_file`) rather than memory of this process.
    #[getter]
    fn is_file_backed(&self) -> bool {
        self.inner.is_file_backed()
    }
    /// True once a layer could not be added (no memory, or no disk space for a file-backed
    /// chain's next file): new keys then go into the last layer, whose false-positive rate
    /// rises past `target_fpr`.
    #[getter]
    fn growth_failed(&self) -> bool {
        self.inner.growth_failed()
    }
    /// An estimate of the number of distinct keys inserted, summed over the layers.
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    /// The expected number of new keys taken for repeats so far (false positives: pages
    /// not fetched), from the fill.
    fn estimated_false_positives(&self) -> f64 {
        self.inner.estimated_false_positives()
    }
    /// The false-positive rate now, estimated from the bits set in every layer.
    fn estimated_fpr(&self) -> f64 {
        self.inner.estimated_fpr()
    }
    fn __repr__(&self) -> String {
        format!(
            "GrowableBloomFilter(initial_capacity={}, fpr={}, num_layers={})",
            self.inner.initial_capacity(),
            self.inner.target_fpr(),
            self.inner.num_layers()
        )
    }
}
