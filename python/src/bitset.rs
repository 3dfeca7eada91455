//! `AtomicBitSet`: exact membership for dense integer ids.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::*;

/// A lock-free set of the integers in `range(universe)`, one bit each (exact, no false
/// positives): for ids that are already small integers.
///
/// A number outside `range(universe)` given to `add`, `insert_if_absent` or `remove`
/// raises `ValueError`.
///
/// >>> s = AtomicBitSet(1000)
/// >>> s.insert_if_absent(7), s.insert_if_absent(7), 7 in s, len(s)
/// (True, False, True, 1)
/// >>> s.add(8); sorted(s)
/// [7, 8]
#[pyclass(frozen, module = "blockbloom")]
pub(crate) struct AtomicBitSet {
    pub(crate) inner: blockbloom::AtomicBitSet,
}

impl AtomicBitSet {
    fn check(&self, i: u64) -> PyResult<u64> {
        if i < self.inner.universe() {
            Ok(i)
        } else {
            Err(PyValueError::new_err(format!(
                "{i} is outside the universe 0..{}",
                self.inner.universe()
            )))
        }
    }
}

#[pymethods]
impl AtomicBitSet {
    #[new]
    fn new(universe: Unsigned<u64>) -> PyResult<Self> {
        Ok(AtomicBitSet {
            inner: blockbloom::AtomicBitSet::new(universe.0).map_err(err)?,
        })
    }
    /// The set saved at `path` by `save`. `OSError` if the file cannot be read;
    /// `SnapshotError` if it is not a saved set or is damaged.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(AtomicBitSet {
            inner: blockbloom::AtomicBitSet::load(&path).map_err(err)?,
        })
    }
    /// Writes the set to `path` atomically (the previous file or the complete new one,
    /// whatever happens). `OSError` on failure.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(err)
    }
    /// Adds `i`; `True` if it was absent (of several threads adding it at once, exactly
    /// one gets `True`).
    fn insert_if_absent(&self, i: Unsigned<u64>) -> PyResult<bool> {
        Ok(self.inner.insert_if_absent(self.check(i.0)?))
    }
    /// Adds `i` (`insert_if_absent` without the answer), like `set.add`.
    fn add(&self, i: Unsigned<u64>) -> PyResult<()> {
        self.inner.insert(self.check(i.0)?);
        Ok(())
    }
    /// Removes `i`; `True` if it was present.
    fn remove(&self, i: Unsigned<u64>) -> PyResult<bool> {
        Ok(self.inner.remove(self.check(i.0)?))
    }
    /// Like `range`'s: anything that is not an id in the universe (a negative number, a
    /// string) is simply not in the set.
    fn __contains__(&self, i: &Bound<'_, PyAny>) -> bool {
        i.extract::<u64>()
            .is_ok_and(|i| i < self.inner.universe() && self.inner.contains(i))
    }
    /// How many integers are in the set.
    fn __len__(&self) -> usize {
        self.inner.len() as usize
    }
    /// The integers in the set, in increasing order.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let v: Vec<u64> = self.inner.iter().collect();
        Ok(PyList::new(py, v)?.try_iter()?.into_any().unbind())
    }
    /// The size of the universe: the set holds integers in `range(universe)`.
    #[getter]
    fn universe(&self) -> u64 {
        self.inner.universe()
    }
    fn __repr__(&self) -> String {
        format!(
            "AtomicBitSet(universe={}, len={})",
            self.inner.universe(),
            self.inner.len()
        )
    }
    /// Bytes of memory the set takes (one bit per integer of the universe).
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
}
