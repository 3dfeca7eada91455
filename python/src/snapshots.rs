//! What the members with a snapshot format share to be `bytes`, pickled and copied
//! (`to_bytes`, `from_bytes`, `__reduce__`, `__copy__`): their snapshot, as the Rust
//! `write_to` writes it.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::err;

/// A Rust member's snapshot (`write_to`, `read_from`).
pub(crate) trait Snapshot: Sized {
    fn write_to(&self, out: &mut Vec<u8>) -> Result<(), blockbloom::Error>;
    fn read_from(data: &[u8]) -> Result<Self, blockbloom::Error>;
}

macro_rules! snapshot {
    ($($t:ty),*) => {$(
        impl Snapshot for $t {
            fn write_to(&self, out: &mut Vec<u8>) -> Result<(), blockbloom::Error> {
                <$t>::write_to(self, out)
            }
            fn read_from(data: &[u8]) -> Result<Self, blockbloom::Error> {
                <$t>::read_from(data)
            }
        }
    )*};
}
snapshot!(
    blockbloom::BloomFilter,
    blockbloom::ExpiringBloomFilter,
    blockbloom::CountingBloomFilter,
    blockbloom::AtomicBitSet
);

/// `to_bytes`: the snapshot of `x`.
pub(crate) fn to_bytes<'py>(py: Python<'py>, x: &impl Snapshot) -> PyResult<Bound<'py, PyBytes>> {
    let mut v = Vec::new();
    x.write_to(&mut v).map_err(err)?;
    Ok(PyBytes::new(py, &v))
}

/// `from_bytes`: the member of a snapshot (`SnapshotError` if `data` is not one of its kind
/// or is damaged).
pub(crate) fn from_bytes<T: Snapshot>(data: &[u8]) -> PyResult<T> {
    T::read_from(data).map_err(err)
}

/// `__copy__`: an in-memory member with the contents of `x`.
pub(crate) fn copy_of<T: Snapshot>(x: &T) -> PyResult<T> {
    let mut v = Vec::new();
    x.write_to(&mut v).map_err(err)?;
    from_bytes(&v)
}

/// `__reduce__` of an in-memory member: class `C`'s `from_bytes` of its snapshot.
pub(crate) fn reduce_to_bytes<'py, C: pyo3::PyTypeInfo>(
    py: Python<'py>,
    x: &impl Snapshot,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
    Ok((
        py.get_type::<C>().getattr("from_bytes")?,
        PyTuple::new(py, [to_bytes(py, x)?])?,
    ))
}
