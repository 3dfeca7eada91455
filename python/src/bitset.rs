//! `AtomicBitSet`: exact membership for dense integer ids.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

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
///
/// It pickles and copies as its contents (`to_bytes`), and `|=` adds another set's
/// integers (`|` makes a new set):
///
/// >>> import pickle
/// >>> t = pickle.loads(pickle.dumps(s)); t.add(9); s |= t; sorted(s)
/// [7, 8, 9]
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
    /// The set as `bytes` (what `save` writes; `from_bytes` reads it back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        snapshots::to_bytes(py, &self.inner)
    }
    /// The set of `bytes` made by `to_bytes` or `save`; `SnapshotError` if `data` is not
    /// one or is damaged.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(AtomicBitSet {
            inner: snapshots::from_bytes(data)?,
        })
    }
    /// Pickling: the set as its contents (`to_bytes`).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        snapshots::reduce_to_bytes::<AtomicBitSet>(slf.py(), &slf.get().inner)
    }
    /// `copy.copy`: a set with the same integers.
    fn __copy__(&self) -> PyResult<Self> {
        Ok(AtomicBitSet {
            inner: snapshots::copy_of(&self.inner)?,
        })
    }
    /// `copy.deepcopy`: as `copy.copy` (a set holds no Python objects).
    #[pyo3(signature = (_memo, /))]
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__()
    }
    /// Adds every integer of `other` (safe while threads add to either); `ValueError` if
    /// the universes differ.
    fn union(&self, other: &AtomicBitSet) -> PyResult<()> {
        self.inner.union(&other.inner).map_err(err)
    }
    /// `s |= other`: `union`.
    fn __ior__(&self, other: &AtomicBitSet) -> PyResult<()> {
        self.union(other)
    }
    /// `s | other`: a new set with the integers of both (`ValueError` if the universes
    /// differ).
    fn __or__(&self, other: &AtomicBitSet) -> PyResult<Self> {
        let out = self.__copy__()?;
        out.union(other)?;
        Ok(out)
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
