//! `CountingBloomFilter`: the filter that can remove keys.

use blockbloom::Filter;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::*;

/// A Bloom filter whose keys can be removed: 4-bit counters instead of bits, four to five
/// times the memory of a `BloomFilter` at the same rate.
///
/// Sized for `capacity` keys at false-positive rate `fpr`; bad parameters raise
/// `ValueError`.
///
/// >>> f = CountingBloomFilter(1000, 0.01)
/// >>> f.add("https://example.com/")
/// >>> f.remove("https://example.com/"), "https://example.com/" in f
/// (True, False)
///
/// It saves (`save`, `load`), pickles and copies as its counters:
///
/// >>> import pickle
/// >>> f.add("a"); f.add("a")
/// >>> pickle.loads(pickle.dumps(f)).estimated_count("a")
/// 2
#[pyclass(frozen, module = "blockbloom")]
pub(crate) struct CountingBloomFilter {
    pub(crate) inner: blockbloom::CountingBloomFilter,
}

#[pymethods]
impl CountingBloomFilter {
    #[new]
    #[pyo3(signature = (capacity, fpr = 0.01, seed = None))]
    fn new(capacity: Unsigned<u64>, fpr: f64, seed: Option<Unsigned<u128>>) -> PyResult<Self> {
        let capacity = capacity.0;
        let inner = match seed.map(|s| s.0) {
            Some(s) => blockbloom::CountingBloomFilter::with_seed(capacity, fpr, s),
            None => blockbloom::CountingBloomFilter::with_capacity(capacity, fpr),
        }
        .map_err(err)?;
        Ok(CountingBloomFilter { inner })
    }
    /// Inserts `key` if it is absent; `True` if this call inserted it. Keys are `str` or
    /// `bytes` (anything else: `TypeError`).
    fn insert_if_absent(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.insert_if_absent(&k))
    }
    /// Inserts `key` once more (its counters go up by one; `remove` takes one insertion
    /// back). Keys are `str` or `bytes` (anything else: `TypeError`).
    fn add(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        with_key(key, |k| self.inner.insert(&k))
    }
    /// `[f.insert_if_absent(key) for key in keys]` in one call; every key is read first (a
    /// bad key raises `TypeError` before any is inserted).
    fn insert_if_absent_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        each_key(keys, |ks, out| self.inner.insert_if_absent_many(ks, out))
    }
    /// `[key in f for key in keys]` in one call.
    fn contains_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        each_key(keys, |ks, out| self.inner.contains_many(ks, out))
    }
    /// Inserts every key of `keys` once more, like `set.update`; a bad key raises
    /// `TypeError` before any key is inserted.
    fn update(&self, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        each_key(keys, |ks, _| self.inner.insert_many(ks)).map(drop)
    }
    /// The filter saved at `path` by `save`. `OSError` if the file cannot be read;
    /// `SnapshotError` if it is not a saved counting filter or is damaged.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(CountingBloomFilter {
            inner: blockbloom::CountingBloomFilter::load(&path).map_err(err)?,
        })
    }
    /// Writes the counters to `path` atomically (the previous file or the complete new
    /// one, whatever happens); safe while other threads insert and remove. `OSError` on
    /// failure.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(err)
    }
    /// The counters as `bytes` (what `save` writes; `from_bytes` reads it back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        snapshots::to_bytes(py, &self.inner)
    }
    /// The filter of `bytes` made by `to_bytes` or `save`; `SnapshotError` if `data` is
    /// not one or is damaged.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(CountingBloomFilter {
            inner: snapshots::from_bytes(data)?,
        })
    }
    /// Pickling: the filter as its counters (`to_bytes`).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        snapshots::reduce_to_bytes::<CountingBloomFilter>(slf.py(), &slf.get().inner)
    }
    /// `copy.copy`: a filter with the same counters.
    fn __copy__(&self) -> PyResult<Self> {
        Ok(CountingBloomFilter {
            inner: snapshots::copy_of(&self.inner)?,
        })
    }
    /// `copy.deepcopy`: as `copy.copy` (a filter holds no Python objects).
    #[pyo3(signature = (_memo, /))]
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__()
    }
    /// Removes one insertion of `key`; `False` if it was not present (nothing changed).
    fn remove(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.remove(&k))
    }
    /// `key in f`: `False` if `key` is certainly not in the filter; `True` if it is, or,
    /// with probability about `target_fpr`, if it is not. Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }
    /// An upper bound on how many times `key` is present (inserts minus removes): the
    /// smallest of its counters, 0 if it is absent, 15 meaning "15 or more".
    fn estimated_count(&self, key: &Bound<'_, PyAny>) -> PyResult<u8> {
        with_key(key, |k| self.inner.estimated_count(&k))
    }
    /// The hashing key, an int below 2**128.
    #[getter]
    fn seed(&self) -> u128 {
        self.inner.seed()
    }
    /// Counters per key.
    #[getter]
    fn num_hashes(&self) -> u32 {
        self.inner.num_hashes()
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
    /// Bytes of memory the counters take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// An estimate of the number of distinct keys present, from the counters in use.
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    /// The expected number of new keys taken for repeats so far (false positives: pages
    /// not fetched), from the fill.
    fn estimated_false_positives(&self) -> f64 {
        self.inner.estimated_false_positives()
    }
    fn __repr__(&self) -> String {
        format!(
            "CountingBloomFilter(capacity={}, fpr={}, memory_bytes={})",
            self.inner.capacity(),
            self.inner.target_fpr(),
            self.inner.memory_bytes()
        )
    }
}
